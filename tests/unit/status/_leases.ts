/** Heartbeat Leases and Services for the status tests, in memory. */
import type { V1Lease, V1Service } from "@kubernetes/client-node";
import { type HostReport } from "../../../src/status/host_report.ts";
import { encodeHostReport } from "../../../src/status/encode_host_report.ts";
import { builtInRecordedPool as recordedPool } from "../_fakes/built_in_records.ts";
import {
  buildClusterStatus,
  type ClusterStatus,
  observeLeaderLease,
  type StatusInput,
} from "../../../src/status/cluster_status.ts";
import { type Heartbeat, observeHeartbeats, timeMs } from "../../../src/status/heartbeats.ts";
import { RecordObserver } from "../../../src/status/observed_freshness.ts";

/** Noon, 1 January 2026: the "now" of the status tests. */
export const NOW = Date.parse("2026-01-01T12:00:00Z");

/** A report of `host` serving `vips`, each keepalived instance listed (holding where it serves). */
export function report(
  host: string,
  vips: string[],
  options: { all?: string[]; reloadOk?: boolean; pools?: HostReport["pools"] } = {},
): HostReport {
  const all = options.all ?? vips;
  return {
    v: 1,
    host,
    version: "0.1.0",
    announcements: all.map((vip, i) => ({
      announcer: "keepalived",
      name: `keelson_v4_g${i}`,
      state: vips.includes(vip) ? "holding" : "standby",
      observed: "daemon",
      since: "2026-01-01T11:59:00.000Z",
      vips: [vip],
    })),
    vips: vips.map((ip) => ({ ip, since: "2026-01-01T11:58:00.000Z" })),
    reload: { ok: options.reloadOk ?? true, at: "2026-01-01T10:00:00.000Z" },
    announcers: [{ name: "keepalived", apply: "success" }],
    pools: options.pools ?? [],
  };
}

/**
 * A report of a BIRD host announcing `vips` in one static protocol over tor-a (Established or
 * not): its announcement holding while the session is up, failed while down.
 */
export function bgpReport(
  host: string,
  vips: string[],
  options: { established?: boolean; name?: string; serves?: "services" | "control-plane" } = {},
): HostReport {
  const established = options.established ?? true;
  return {
    v: 1,
    host,
    version: "0.1.0",
    announcements: [{
      announcer: "bird",
      name: options.name ?? "keelson_vips4_p0",
      state: established ? "holding" : "failed",
      observed: "daemon",
      since: "2026-01-01T11:59:00.000Z",
      vips,
      serves: options.serves ?? "services",
    }],
    vips: [],
    reload: { ok: true, at: "2026-01-01T10:00:00.000Z" },
    announcers: [{ name: "bird", apply: "success" }],
    pools: [],
    bgp: [{ peer: "tor-a", established, routes: vips.map((v) => `${v}/32`) }],
  };
}

/** A heartbeat Lease renewed `ageMs` before NOW. */
export function heartbeatLease(
  host: string,
  rep: HostReport | string,
  ageMs = 1000,
  leaseSeconds = 15,
): V1Lease {
  return {
    metadata: {
      name: `keelson-host-${host}`,
      namespace: "kube-system",
      annotations: {
        "keelson.io/data-plane": typeof rep === "string" ? rep : encodeHostReport(rep),
      },
    },
    spec: {
      holderIdentity: host,
      leaseDurationSeconds: leaseSeconds,
      renewTime: new Date(NOW - ageMs).toISOString() as unknown as Date,
    },
  };
}

/** The leader Lease, renewed `ageMs` before NOW. */
export function leaderLease(identity: string, ageMs = 1000): V1Lease {
  return {
    metadata: { name: "keelson", namespace: "kube-system" },
    spec: {
      holderIdentity: identity,
      leaseDurationSeconds: 15,
      renewTime: new Date(NOW - ageMs).toISOString() as unknown as Date,
    },
  };
}

/** A LoadBalancer Service holding `ips` from `pool`. */
export function lbService(namespace: string, name: string, ips: string[], pool = "lan"): V1Service {
  return {
    metadata: {
      name,
      namespace,
      annotations: { "keelson.io/allocated-from-pool": pool },
    },
    spec: { type: "LoadBalancer" },
    status: { loadBalancer: { ingress: ips.map((ip) => ({ ip })) } },
  };
}

/** How long the observer of `watched` has watched the Leases before NOW. */
export const WATCHED_MS = 20_000;

/**
 * A reader that watched the Leases for WATCHED_MS up to NOW with every clock right: it saw each
 * renewed at the time its renewTime says (one renewed before the watch began was never seen
 * renewing; one dated after NOW never changed while it watched). Its clock stands at NOW.
 * @param heartbeats heartbeat Leases, as they are at NOW
 * @param leader the leader-election Lease at NOW
 * @returns the observer, to hand to `buildClusterStatus` with the same Leases
 */
export function watched(heartbeats: V1Lease[], leader?: V1Lease): RecordObserver {
  let t = NOW - WATCHED_MS;
  const observer = new RecordObserver(() => t);
  const renewal = (l: V1Lease) => timeMs(l.spec?.renewTime) ?? -Infinity;
  // before its renewal, a Lease held an older record
  const at = (l: V1Lease, when: number): V1Lease => {
    const r = renewal(l);
    return r <= when || r > NOW ? l : {
      ...l,
      spec: { ...l.spec, renewTime: new Date(r - 5000).toISOString() as unknown as Date },
    };
  };
  const times = [...new Set([t, ...[...heartbeats, ...(leader ? [leader] : [])].map(renewal)])]
    .filter((time) => time >= t && time <= NOW).sort((a, b) => a - b);
  for (const time of times) {
    t = time;
    observeHeartbeats(heartbeats.map((l) => at(l, time)), observer, true);
    observeLeaderLease(leader && at(leader, time), observer);
  }
  t = NOW;
  return observer;
}

/** A reader's clock the test moves by hand, and its observer. */
export function manualObserver(start = 0): { observer: RecordObserver; advance(ms: number): void } {
  let t = start;
  return { observer: new RecordObserver(() => t), advance: (ms) => void (t += ms) };
}

/**
 * `buildClusterStatus` by a reader that watched the Leases with every clock right (`watched`).
 * @param input the inputs but the observer
 */
export function statusOf(input: Omit<StatusInput, "observer">): ClusterStatus {
  return buildClusterStatus({
    poolOf: recordedPool,
    ...input,
    observer: watched([...input.leases], input.leaderLease),
  });
}

/**
 * The heartbeats of `leases` as a reader judges them that watched with every clock right.
 * @param leases heartbeat Leases at NOW
 */
export function judged(leases: V1Lease[]): Heartbeat[] {
  return observeHeartbeats(leases, watched(leases), true);
}
