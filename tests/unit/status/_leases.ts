/** Heartbeat Leases and Services for the status tests, in memory. */
import type { V1Lease, V1Service } from "@kubernetes/client-node";
import { encodeHostReport, type HostReport } from "../../../src/status/host_report.ts";

/** Noon, 1 January 2026: the "now" of the status tests. */
export const NOW = Date.parse("2026-01-01T12:00:00Z");

/** A report of `host` serving `vips`, with every instance listed (MASTER where it serves). */
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
    instances: all.map((vip, i) => ({
      name: `keelson_v4_g${i}`,
      state: vips.includes(vip) ? "MASTER" : "BACKUP",
      source: "fifo",
      since: "2026-01-01T11:59:00.000Z",
      vips: [vip],
    })),
    vips: vips.map((ip) => ({ ip, since: "2026-01-01T11:58:00.000Z" })),
    reload: { ok: options.reloadOk ?? true, at: "2026-01-01T10:00:00.000Z", keepalived: "success" },
    pools: options.pools ?? [],
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
