/**
 * The whole data plane in one model, built from what the API holds: every VIP with the
 * Service(s) using it, its pool, the hosts serving it and each host's VRRP state; the leader (from
 * its Lease); each host's heartbeat, version and reload state; pool usage; and the problems
 * (no host, two hosts, a silent host, a failing reload, no leader, a pool above 90 %). Heartbeats
 * of retired hosts (silent, no longer in the inventory: `retired_heartbeats.ts`) are listed apart
 * and count for nothing else.
 *
 * Whether a host or the leader is alive is judged by this reader's observation of its Lease
 * (`observed_freshness.ts`): fresh when seen renewed within its duration, silent when seen
 * unchanged for longer, unconfirmed until either. The time a writer put into its Lease is its own
 * clock's: it is shown beside, as the writer's claim, and never decides anything.
 * Pure: `keelson status` formats it, tests build it from objects in memory.
 *
 * @module
 */
import { type PoolServers, unservedPoolProblems, vipServingProblems } from "./pool_servers.ts";
import type { V1Lease, V1Service } from "@kubernetes/client-node";
import { canonicalIp, compareIpTexts } from "../net/ip.ts";
import {
  anyDataPlaneReported,
  bgpHostsByVip,
  type Heartbeat,
  HEARTBEATS,
  isFresh,
  isSilent,
  lastSeenOnSilentHosts,
  observeHeartbeats,
  partialHosts,
  timeMs,
  vipClaims,
} from "./heartbeats.ts";
import type { Omitted } from "./host_report_limits.ts";
import type { HostReport } from "./host_report.ts";
import {
  type Freshness,
  leaseRecordKey,
  type Observation,
  type RecordObserver,
} from "./observed_freshness.ts";
import { heartbeatCleanupCommand, splitRetired } from "./retired_heartbeats.ts";
import { type Judgement, supersededByLeader, withLeaderJudgement } from "./leader_judgement.ts";
import {
  type InventoryAgreement,
  inventoryAgreement,
  type OtherInventory,
  shortDigest,
} from "./inventory_agreement.ts";
import { compareCodeUnits } from "../text/code_unit_order.ts";
import { identityHost } from "../kube/elector_options.ts";

/** The annotation naming the pool a Service's address came from. */
export const POOL_ANNOTATION = "keelson.io/allocated-from-pool";
/** A pool above this share of its addresses in use is a problem. */
export const POOL_FULL_RATIO = 0.9;

/** One host's VRRP state for a VIP. */
export interface VipHostState {
  host: string;
  instance: string;
  state: string;
}

/** One row of the VIP table. */
export interface VipStatus {
  vip: string;
  /** `namespace/name` of each Service using it; empty for the control-plane VIP. */
  services: string[];
  pool: string | undefined;
  /** Hosts serving it now (fresh heartbeats listing it, renewed since any other claim began). */
  hosts: string[];
  /**
   * Fresh hosts still listing it that have not renewed since another host began to (`vipClaims`):
   * a host that died looks like this until its Lease runs out; not counted.
   */
  superseded: string[];
  /**
   * With no host listing it: fresh hosts whose report was cut at its size limit, so may hold it
   * among what they left out (`partialHosts`).
   */
  maybeOn: string[];
  /**
   * Hosts announcing it over BGP now (fresh heartbeats exporting it to an Established peer).
   * Several is normal: the routers spread flows over them (ECMP).
   */
  bgpHosts: string[];
  /**
   * Hosts not seen renewing (silent, or unconfirmed) whose last heartbeat listed it (whether they
   * still serve it is unknown).
   */
  lastSeenOn: string[];
  /** Per host with an instance holding this VIP: its state. */
  states: VipHostState[];
  /**
   * When the serving host got it (ISO, by this reader's clock: the host's own times, which its
   * clock wrote, only give how long before its renewal), when exactly one host serves it.
   */
  since: string | undefined;
  /**
   * `no-service`: a host serves it (VRRP or BGP) while no Service holds it and it is no
   * control-plane VIP — an address Keelson never gave out.
   */
  problem: "no-host" | "split-brain" | "unknown" | "no-service" | undefined;
}

/** One row of the host table. */
export interface HostStatus {
  host: string;
  /** The last renewal time the host wrote (ISO), by its own clock: its claim, never judged. */
  lastHeartbeat: string | undefined;
  /** fresh (seen renewed within its lease), silent (seen unchanged for longer), unconfirmed. */
  freshness: Freshness;
  /**
   * Milliseconds since this reader saw the heartbeat renewed; when it never saw a renewal
   * (`renewalSeen` false), since it first read it: the heartbeat is at least that old.
   */
  ageMs: number;
  /** Whether this reader saw the heartbeat renewed. */
  renewalSeen: boolean;
  leaseMs: number;
  silent: boolean;
  version: string | undefined;
  reload: HostReport["reload"] | undefined;
  /** Why the report could not be read. */
  reportError: string | undefined;
  vipsServed: number;
  /** What the host's report left out at its size limit (`host_report_limits.ts`), if anything. */
  omitted: Omitted | undefined;
  /** BGP sessions (BIRD hosts): peer, Established, prefixes exported; undefined without BIRD. */
  bgp: { peer: string; established: boolean; routes: number }[] | undefined;
  /** True when the host reports BGP sessions and none is Established. */
  bgpDown: boolean;
  /** The inventory in force on the host (digest, since by its clock); undefined when unreported. */
  inventory: { sha256: string; since: string } | undefined;
  /** True when the host runs another inventory than the reference (`ClusterStatus.inventory`). */
  otherInventory: boolean;
}

/** A LoadBalancer Service still waiting for an address. */
export interface PendingService {
  /** `namespace/name`. */
  service: string;
  /** Its `spec.loadBalancerClass`; undefined when unset. */
  loadBalancerClass: string | undefined;
}

/** A heartbeat left by a retired host: it counts for nothing; delete it with `cleanup`. */
export interface RetiredHostStatus {
  host: string;
  /** The last renewal time the host wrote (ISO), by its own clock. */
  lastHeartbeat: string | undefined;
  /** Milliseconds this reader saw it unchanged (at least; since its last renewal if seen). */
  ageMs: number;
  /** The command that deletes the Lease. */
  cleanup: string;
}

/** One pool and family. */
export interface PoolStatus {
  pool: string;
  family: string;
  total: number;
  used: number;
  full: boolean;
}

/** One machine's power, as the host polling its BMC (the leader) published it. */
export interface PowerStatus {
  machine: string;
  state: "on" | "off" | "unknown";
  /** When the host first saw this state (ISO, by this reader's clock, as `VipStatus.since`). */
  since: string | undefined;
  /** When the BMC last gave a valid answer (ISO, by this reader's clock); undefined when never. */
  answered: string | undefined;
  /** What was seen (the PowerState, or why there was no answer). */
  detail: string;
}

/** The leader, from its Lease. */
export interface LeaderStatus {
  identity: string | undefined;
  /** The renewal time the leader wrote (ISO), by its own clock: its claim, never judged. */
  renewTime: string | undefined;
  /** fresh (seen renewed within its duration), silent, or unconfirmed (not watched long enough). */
  freshness: Freshness;
  /** As `HostStatus.ageMs`; undefined without a Lease. */
  ageMs: number | undefined;
  /** Whether this reader saw the Lease renewed. */
  renewalSeen: boolean;
  /** True when this reader saw the Lease unchanged for longer than its duration (nobody leads). */
  expired: boolean;
}

/** Everything `keelson status` shows. */
export interface ClusterStatus {
  now: string;
  /**
   * Whose observation judged the heartbeats: the leader's published judgement (`seq`, at most
   * `ageMs` old by this reader's clock), or this reader's own watch (`observedMs`).
   */
  judgedBy: { by: "leader"; seq: number; ageMs: number } | { by: "reader" };
  /** How long this reader watched the Leases for renewals (ms) before judging them. */
  observedMs: number;
  leader: LeaderStatus;
  vips: VipStatus[];
  hosts: HostStatus[];
  /** Heartbeats of retired hosts (silent, not in the inventory); empty without an inventory. */
  retired: RetiredHostStatus[];
  /** Whether the inventory was known (only then can a heartbeat be told retired). */
  inventoryKnown: boolean;
  pools: PoolStatus[];
  /**
   * Machines' power from the leader's heartbeat only (only the leader polls the BMCs; another
   * host's report is a former leader's, however recent), when it is fresh; sorted.
   */
  power: PowerStatus[];
  /** The leader's host, whose heartbeat `power` comes from; undefined when none is shown. */
  powerFrom: string | undefined;
  /**
   * Whether the hosts run one inventory: the reference digest (the leader's, else most hosts'),
   * the hosts on another, those that report none (older versions).
   */
  inventory: {
    reference: InventoryAgreement["reference"];
    others: OtherInventory[];
    unreported: string[];
    /** The `--config` file's digest, when given, and whether it is the reference. */
    file: { sha256: string; matches: boolean | undefined } | undefined;
  };
  /** LoadBalancer Services without an address yet, sorted. */
  pending: PendingService[];
  /**
   * Each pool's serving hosts and whether each can serve now (`pool_servers.ts`); empty without
   * the inventory.
   */
  servingHosts: PoolServers[];
  /** One sentence per problem; empty when healthy. */
  problems: string[];
}

/** Inputs of `buildClusterStatus`. */
export interface StatusInput {
  services: readonly V1Service[];
  /** Leases of the heartbeat namespace (others are ignored). */
  leases: readonly V1Lease[];
  /** The leader-election Lease; undefined when it does not exist. */
  leaderLease: V1Lease | undefined;
  /**
   * This reader's memory of when each Lease last changed (every read it made of them, this one
   * included): the one judge of freshness.
   */
  observer: RecordObserver;
  /** The wall clock now (ms since the epoch): only to show the writers' claims beside. */
  nowMs: number;
  /**
   * The hosts of the inventory (`inventoryHosts`): a silent heartbeat of any other host is
   * retired. Undefined when the inventory is not known: every silent host is then silent.
   */
  inventory?: ReadonlySet<string>;
  /**
   * The inventory's control-plane machines (not retired): each must have reported a heartbeat;
   * undefined when the inventory is not known.
   */
  controlPlane?: ReadonlySet<string>;
  /**
   * The inventory's control-plane VIPs (canonical): served with no Service. Undefined when the
   * inventory is not known: an address in a keepalived instance named `keelson_cp_*` is then one.
   */
  controlPlaneVips?: ReadonlySet<string>;
  /** The digest of the `--config` file (`loadInventory`), to compare with the hosts'. */
  inventorySha256?: string;
  /**
   * The leader's published judgement of the heartbeats, trusted by the caller
   * (`trustJudgement`), and the bound on its age by this reader's clock: used instead of this
   * reader's own observation for every host it lists. @default this reader's observation only
   */
  leaderJudgement?: { judgement: Judgement; sinceMs: number };
  /**
   * Each pool's serving hosts (`poolServersOf`: the inventory and the Nodes' readiness); judged
   * for pools nothing can serve and VIPs held only off their pool's hosts. @default none judged
   */
  servingHosts?: readonly PoolServers[];
}

/**
 * Builds the status model.
 * @param input Services, Leases, the leader Lease and the time
 * @returns the model, rows sorted
 */
export function buildClusterStatus(input: StatusInput): ClusterStatus {
  const { nowMs, observer } = input;
  const own = observeHeartbeats(input.leases, observer, true);
  const trusted = input.leaderJudgement;
  const { current: heartbeats, retired } = splitRetired(
    (trusted ? withLeaderJudgement(own, trusted.judgement, trusted.sinceMs, observer.now()) : own)
      .sort((a, b) => compareCodeUnits(a.host, b.host)),
    input.inventory,
  );
  const problems: string[] = [];

  const leader = leaderStatus(input.leaderLease, observer);
  if (trusted && leader.identity === trusted.judgement.leader) {
    // this reader saw the leader's publication change: the leader is alive, renewing
    leader.freshness = "fresh";
    leader.expired = false;
    leader.renewalSeen = true;
    leader.ageMs = trusted.sinceMs;
  }
  if (!leader.identity) problems.push("no leader: the leader-election Lease has no holder");
  else if (leader.expired) {
    problems.push(`no leader: ${leader.identity} stopped renewing the Lease`);
  }

  const leaderHost = leader.expired ? undefined : leaderHeartbeatHost(leader.identity, heartbeats);
  const hosts: HostStatus[] = heartbeats.map((h) => {
    const fresh = isFresh(h);
    const report = "error" in h.report ? undefined : h.report;
    return {
      host: h.host,
      lastHeartbeat: isoTime(h.claimedRenewMs),
      freshness: h.observed.freshness,
      ageMs: h.observed.ageMs,
      renewalSeen: h.observed.changeSeen,
      leaseMs: h.durationMs,
      silent: isSilent(h),
      version: report?.version,
      reload: report?.reload,
      reportError: "error" in h.report ? h.report.error : undefined,
      vipsServed: fresh && report ? report.vips.length : 0,
      omitted: report?.omitted,
      bgp: report?.bgp?.map((p) => ({
        peer: p.peer,
        established: p.established,
        routes: p.routes.length,
      })),
      bgpDown: fresh && (report?.bgp?.length ?? 0) > 0 &&
        report!.bgp!.every((p) => !p.established),
      inventory: report?.inventory,
      otherInventory: false,
    };
  });
  for (const h of hosts) {
    if (h.silent) {
      problems.push(
        `host ${h.host} is silent: ${
          h.renewalSeen
            ? `no heartbeat for ${formatAge(h.ageMs)}`
            : `its heartbeat did not change in the ${formatAge(h.ageMs)} watched`
        } (lease ${formatAge(h.leaseMs)}${
          h.renewalSeen ? "" : `; ${claimedAge(h.lastHeartbeat, nowMs)}`
        })` + (input.inventory === undefined
          ? ` (if it was removed from the inventory: ${
            heartbeatCleanupCommand(h.host)
          }; --config tells retired hosts apart)`
          : ""),
      );
    }
    if (h.reportError) {
      problems.push(`host ${h.host} published an unreadable report: ${h.reportError}`);
    }
    if (h.reload && !h.reload.ok) {
      problems.push(`host ${h.host}: the last configuration reload failed`);
    }
    if (h.bgpDown) {
      problems.push(
        `host ${h.host}: every BGP session is down (${h.bgp!.map((p) => p.peer).join(", ")})`,
      );
    }
    if (h.reload && (h.reload.keepalived === "invalid" || h.reload.keepalived === "error")) {
      problems.push(`host ${h.host}: the last keepalived config apply was ${h.reload.keepalived}`);
    }
    if (!h.silent && h.reload?.keepalived === "not_running") {
      problems.push(
        `host ${h.host}: keepalived is not running (its last config was written, not loaded)`,
      );
    }
  }

  // VIPs: of Services (status), and of every instance a fresh host reports
  const rows = new Map<string, VipStatus>();
  const row = (vip: string): VipStatus => {
    let r = rows.get(vip);
    if (!r) {
      r = {
        vip,
        services: [],
        pool: undefined,
        hosts: [],
        superseded: [],
        maybeOn: [],
        bgpHosts: [],
        lastSeenOn: [],
        states: [],
        since: undefined,
        problem: undefined,
      };
      rows.set(vip, r);
    }
    return r;
  };
  for (const service of input.services) {
    if (service.spec?.type !== "LoadBalancer") continue;
    const key = `${service.metadata?.namespace ?? ""}/${service.metadata?.name ?? ""}`;
    const pool = service.metadata?.annotations?.[POOL_ANNOTATION];
    for (const ingress of service.status?.loadBalancer?.ingress ?? []) {
      const vip = ingress.ip ? canonicalIp(ingress.ip) : undefined;
      if (!vip) continue;
      const r = row(vip);
      if (!r.services.includes(key)) r.services.push(key);
      r.pool ??= pool;
    }
  }
  const fresh = heartbeats.filter(isFresh);
  const judged = anyDataPlaneReported(heartbeats) ||
    heartbeats.some((h) => !("error" in h.report) && (h.report.bgp?.length ?? 0) > 0);
  for (const h of fresh) {
    if ("error" in h.report) continue;
    for (const instance of h.report.instances) {
      for (const vip of instance.vips) {
        row(vip).states.push({ host: h.host, instance: instance.name, state: instance.state });
      }
    }
  }
  const claims = vipClaims(heartbeats);
  if (trusted) {
    // the leader's memory of who began to list a VIP when, which this reader lacks
    for (const [vip, hosts] of supersededByLeader(trusted.judgement)) {
      const claim = claims.get(vip);
      if (!claim) continue;
      claim.superseded = [...claim.superseded, ...claim.serving.filter((h) => hosts.has(h))];
      claim.serving = claim.serving.filter((h) => !hosts.has(h));
    }
  }
  for (const [vip, { serving, superseded }] of claims) {
    const r = row(vip);
    r.hosts = serving;
    r.superseded = superseded;
    for (const host of serving) {
      const h = fresh.find((f) => f.host === host)!;
      const served = "error" in h.report ? undefined : h.report.vips.find((v) => v.ip === vip);
      const since = served && sinceByReaderClock(served.since, h, nowMs);
      r.since = r.since === undefined || (since !== undefined && since > r.since) ? since : r.since;
    }
  }
  for (const [vip, hosts] of bgpHostsByVip(heartbeats)) row(vip).bgpHosts = hosts;
  for (const [vip, silent] of lastSeenOnSilentHosts(heartbeats)) row(vip).lastSeenOn = silent;
  const silentHosts = new Set(heartbeats.filter(isSilent).map((h) => h.host));
  const partial = partialHosts(heartbeats);
  const vips = [...rows.values()].sort((a, b) => compareIpTexts(a.vip, b.vip));
  for (const r of vips) {
    r.services.sort();
    r.hosts.sort();
    r.bgpHosts.sort();
    r.states.sort((a, b) => compareCodeUnits(a.host, b.host));
    // while no host reports a data plane (no keepalived under Keelson) nothing is judged
    if (r.hosts.length === 0 && r.lastSeenOn.length > 0) {
      r.problem = "unknown";
      const allSilent = r.lastSeenOn.every((h) => silentHosts.has(h));
      problems.push(
        `VIP ${r.vip}${forServices(r)} was last reported on ${r.lastSeenOn.join(", ")}, ${
          allSilent ? "which went silent" : "not seen renewing its heartbeat"
        }: whether it is served is unknown`,
      );
    } else if (r.hosts.length === 0 && r.bgpHosts.length > 0) {
      // announced over BGP (by one or, ECMP, by every healthy host): served
    } else if (r.hosts.length === 0 && partial.length > 0) {
      r.problem = "unknown";
      r.maybeOn = partial;
      problems.push(
        `VIP ${r.vip}${forServices(r)} is listed by no host, but the report of ${
          partial.join(", ")
        } was cut at its size limit: whether it is served is unknown`,
      );
    } else if (r.hosts.length === 0 && judged) {
      r.problem = "no-host";
      problems.push(`VIP ${r.vip}${forServices(r)} is served by no host`);
    } else if (r.hosts.length > 1) {
      r.problem = "split-brain";
      problems.push(
        `VIP ${r.vip}${forServices(r)} is served by ${r.hosts.length} hosts (split brain): ${
          r.hosts.join(", ")
        }`,
      );
    }
    if (r.hosts.length !== 1) r.since = undefined;
  }

  // addresses served that no Service holds and that are no control-plane VIP
  const known = input.controlPlaneVips ??
    (trusted?.judgement.control_plane_vips
      ? new Set(trusted.judgement.control_plane_vips)
      : undefined);
  const cpVips = known ?? controlPlaneInstanceVips(fresh);
  for (const r of vips) {
    if (r.services.length > 0 || cpVips.has(r.vip)) continue;
    // without the inventory a control-plane VIP announced over BGP looks like any address
    const servers = [
      ...new Set([...r.hosts, ...r.superseded, ...(known ? r.bgpHosts : [])]),
    ].sort();
    if (servers.length === 0) continue;
    r.problem ??= "no-service";
    problems.push(
      `${servers.length === 1 ? "host" : "hosts"} ${servers.join(", ")} ${
        servers.length === 1 ? "serves" : "serve"
      } ${r.vip}, which no Service holds and which is no control-plane VIP`,
    );
  }

  // every control-plane machine of the inventory must have reported
  // without the inventory, the leader's (from its judgement) says which machines must report
  const controlPlane = input.controlPlane ??
    (trusted?.judgement.control_plane ? new Set(trusted.judgement.control_plane) : undefined);
  for (const machine of [...controlPlane ?? []].sort(compareCodeUnits)) {
    if (!heartbeats.some((h) => h.host === machine)) {
      problems.push(`control-plane machine ${machine} has never reported (no heartbeat Lease)`);
    }
  }

  // one inventory on every host
  const agreement = inventoryAgreement(
    heartbeats.map((h) => ({ host: h.host, fresh: isFresh(h), report: h.report })),
    leaderHost,
  );
  const otherHosts = new Set(agreement.others.map((o) => o.host));
  for (const h of hosts) h.otherInventory = otherHosts.has(h.host);
  for (const o of agreement.others) {
    const ref = agreement.reference;
    problems.push(
      `host ${o.host} runs another inventory (sha256 ${shortDigest(o.sha256)}, ${
        claimedAgo(o.since, nowMs) ?? "?"
      } by its clock) than ${
        ref === undefined
          ? "the other hosts (no digest has most hosts)"
          : ref.from === "leader"
          ? `the leader ${ref.host} (sha256 ${shortDigest(ref.sha256)})`
          : `most hosts (sha256 ${shortDigest(ref.sha256)})`
      }`,
    );
  }

  const pools = poolUsage(fresh);
  for (const p of pools) {
    if (p.full) {
      problems.push(
        `pool ${p.pool} (${p.family}) is ${Math.round((p.used / p.total) * 100)}% used ` +
          `(${p.used} of ${p.total})`,
      );
    }
  }
  const { power, from: powerFrom } = machinePower(
    heartbeats.filter((h) => isFresh(h) && h.host === leaderHost),
    nowMs,
  );
  for (const p of power) {
    if (p.state === "unknown") problems.push(`machine ${p.machine}: power unknown (${p.detail})`);
  }
  const servingHosts = [...input.servingHosts ?? []];
  problems.push(
    ...unservedPoolProblems(servingHosts),
    ...vipServingProblems(servingHosts, vips),
  );
  return {
    now: new Date(nowMs).toISOString(),
    judgedBy: trusted
      ? { by: "leader", seq: trusted.judgement.seq, ageMs: trusted.sinceMs }
      : { by: "reader" },
    observedMs: observer.watchedMs(HEARTBEATS),
    leader,
    vips,
    hosts,
    retired: retired.map((h) => ({
      host: h.host,
      lastHeartbeat: isoTime(h.claimedRenewMs),
      ageMs: h.observed.ageMs,
      cleanup: heartbeatCleanupCommand(h.host),
    })),
    inventoryKnown: input.inventory !== undefined,
    inventory: {
      reference: agreement.reference,
      others: agreement.others,
      unreported: agreement.unreported,
      file: input.inventorySha256 === undefined ? undefined : {
        sha256: input.inventorySha256,
        matches: agreement.reference && agreement.reference.sha256 === input.inventorySha256,
      },
    },
    pending: pendingServices(input.services),
    pools,
    power,
    powerFrom,
    servingHosts,
    problems,
  };
}

/** The VIPs fresh hosts hold in their control-plane keepalived instances (`keelson_cp_v4|6`). */
function controlPlaneInstanceVips(fresh: readonly Heartbeat[]): Set<string> {
  const vips = new Set<string>();
  for (const h of fresh) {
    if ("error" in h.report) continue;
    for (const instance of h.report.instances) {
      if (/^keelson_cp_v[46]$/.test(instance.name)) {
        for (const vip of instance.vips) vips.add(vip);
      }
    }
  }
  return vips;
}

/** LoadBalancer Services with no address in their status. */
function pendingServices(services: readonly V1Service[]): PendingService[] {
  return services.filter((s) =>
    s.spec?.type === "LoadBalancer" &&
    !(s.status?.loadBalancer?.ingress ?? []).some((i) => i.ip && canonicalIp(i.ip))
  ).map((s) => ({
    service: `${s.metadata?.namespace ?? ""}/${s.metadata?.name ?? ""}`,
    loadBalancerClass: s.spec?.loadBalancerClass || undefined,
  })).sort((a, b) => compareCodeUnits(a.service, b.service));
}

function forServices(r: VipStatus): string {
  return r.services.length > 0 ? ` (${r.services.join(", ")})` : "";
}

/** The kind of record the leader-election Lease is to an observer (one record of its kind). */
const LEADER = "leader-election";

/**
 * Notes one read of the leader-election Lease and judges it.
 * @param lease the Lease as read; undefined when it does not exist
 * @param observer the reader's memory
 * @returns the observation, or undefined without a Lease
 */
export function observeLeaderLease(
  lease: V1Lease | undefined,
  observer: RecordObserver,
): Observation | undefined {
  observer.see(LEADER, lease ? [{ id: LEADER, key: leaseRecordKey(lease) }] : [], true);
  if (!lease) return undefined;
  const seconds = lease.spec?.leaseDurationSeconds;
  return observer.judge(
    LEADER,
    LEADER,
    (typeof seconds === "number" && seconds > 0 && seconds <= 3600 ? seconds : 15) * 1000,
  );
}

function leaderStatus(lease: V1Lease | undefined, observer: RecordObserver): LeaderStatus {
  const identity = lease?.spec?.holderIdentity || undefined;
  const observed = observeLeaderLease(lease, observer);
  return {
    identity,
    renewTime: isoTime(timeMs(lease?.spec?.renewTime)),
    freshness: observed?.freshness ?? "silent",
    ageMs: observed?.ageMs,
    renewalSeen: observed?.changeSeen ?? false,
    expired: observed === undefined || observed.freshness === "silent",
  };
}

/** Pool usage from the most recently renewed fresh heartbeat that reports any. */
function poolUsage(fresh: readonly Heartbeat[]): PoolStatus[] {
  const newest = [...fresh].filter((h) => !("error" in h.report) && h.report.pools.length > 0)
    .sort((a, b) => a.observed.ageMs - b.observed.ageMs)[0];
  if (!newest || "error" in newest.report) return [];
  return newest.report.pools.map((p) => ({
    pool: p.pool,
    family: p.family,
    total: p.total,
    used: p.used,
    full: p.total > 0 && p.used / p.total > POOL_FULL_RATIO,
  }));
}

/**
 * The heartbeat host a leader identity names: the part before the last `_` when a heartbeat has
 * that name (the agent's identity is `<machine>_<uuid>`), else the first label of it
 * (`identityHost`: a host name's short form, as client-go's default identity has it).
 * @param identity the leader Lease's holder, if any
 * @param heartbeats every heartbeat
 * @returns the host, or undefined when there is no holder
 */
export function leaderHeartbeatHost(
  identity: string | undefined,
  heartbeats: readonly { host: string }[],
): string | undefined {
  if (!identity) return undefined;
  const underscore = identity.lastIndexOf("_");
  const whole = underscore > 0 ? identity.slice(0, underscore) : identity;
  if (heartbeats.some((h) => h.host === whole)) return whole;
  return identityHost(identity);
}

/** Machines' power from the given (the leader's fresh) heartbeat, when it reports any. */
function machinePower(
  fresh: readonly Heartbeat[],
  nowMs: number,
): { power: PowerStatus[]; from: string | undefined } {
  const newest =
    [...fresh].filter((h) => !("error" in h.report) && (h.report.power?.length ?? 0) > 0)
      .sort((a, b) => a.observed.ageMs - b.observed.ageMs)[0];
  if (!newest || "error" in newest.report) return { power: [], from: undefined };
  const power = (newest.report.power ?? []).map((p) => ({
    machine: p.machine,
    state: p.state,
    since: sinceByReaderClock(p.since, newest, nowMs),
    answered: p.answered === undefined ? undefined : sinceByReaderClock(p.answered, newest, nowMs),
    detail: p.detail,
  })).sort((a, b) => compareCodeUnits(a.machine, b.machine));
  return { power, from: newest.host };
}

function isoTime(ms: number | undefined): string | undefined {
  return ms === undefined ? undefined : new Date(ms).toISOString();
}

/**
 * A time a host wrote by its own clock (when a VIP appeared) as this reader's wall-clock time:
 * the host's renewal and the VIP's time are both its clock's, so their difference is how long it
 * had held the VIP at that renewal, and this reader saw that renewal `observed.ageMs` ago.
 */
function sinceByReaderClock(since: string, h: Heartbeat, nowMs: number): string | undefined {
  const sinceMs = Date.parse(since);
  if (h.claimedRenewMs === undefined || Number.isNaN(sinceMs)) return undefined;
  const heldMs = Math.max(0, h.claimedRenewMs - sinceMs) + h.observed.ageMs;
  return new Date(nowMs - heldMs).toISOString();
}

/**
 * What a writer's own clock says of its last renewal, labelled as such.
 * @param claimed the renewal time the writer wrote (ISO), if any
 * @param nowMs this reader's wall clock
 * @returns e.g. `its last renewal says 1h00m ago, by its own clock`
 */
export function claimedAge(claimed: string | undefined, nowMs: number): string {
  const ago = claimedAgo(claimed, nowMs);
  return ago === undefined
    ? "its Lease holds no renewal time"
    : `its last renewal says ${ago}, by its own clock`;
}

/**
 * How long ago a writer's clock says it renewed, as this reader's clock compares.
 * @param claimed the renewal time the writer wrote (ISO), if any
 * @param nowMs this reader's wall clock
 * @returns `3s ago`, `9m00s from now`, or undefined without a time
 */
export function claimedAgo(claimed: string | undefined, nowMs: number): string | undefined {
  const ms = claimed === undefined ? NaN : Date.parse(claimed);
  if (Number.isNaN(ms)) return undefined;
  return nowMs >= ms ? `${formatAge(nowMs - ms)} ago` : `${formatAge(ms - nowMs)} from now`;
}

/**
 * A duration for people: `850ms`, `12s`, `3m05s`, `2h07m`, `3d04h`.
 * @param ms milliseconds
 * @returns the text
 */
export function formatAge(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, "0")}s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h${String(m % 60).padStart(2, "0")}m`;
  return `${Math.floor(h / 24)}d${String(h % 24).padStart(2, "0")}h`;
}
