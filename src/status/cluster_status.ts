/**
 * The whole data plane in one model, built from what the API holds: every VIP with the
 * Service(s) using it, its pool, the hosts serving it and each host's state of it (VRRP or BGP:
 * several BGP hosts holding one VIP is normal); the leader (from its Lease); each host's
 * heartbeat, version and reload state; pool usage (`buildStatusModel`); then its problems,
 * decided apart (`decide_problems.ts`: no host, two hosts, a silent host, a failing reload, no
 * leader, a pool above 90 %). Heartbeats of retired hosts (silent, no longer in the inventory:
 * `retired_heartbeats.ts`) are listed apart and count for nothing else.
 *
 * Whether a host or the leader is alive is judged by this reader's observation of its Lease
 * (`observed_freshness.ts`): fresh when seen renewed within its duration, silent when seen
 * unchanged for longer, unconfirmed until either. The time a writer put into its Lease is its own
 * clock's: it is shown beside, as the writer's claim, and never decides anything.
 * Pure: `keelson status` formats it, tests build it from objects in memory.
 *
 * @module
 */
import type { PoolServers } from "./pool_servers.ts";
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
import { leaseRecordKey, type Observation, type RecordObserver } from "./observed_freshness.ts";
import { heartbeatCleanupCommand, splitRetired } from "./retired_heartbeats.ts";
import { type Judgement, supersededByLeader, withLeaderJudgement } from "./leader_judgement.ts";
import { inventoryAgreement } from "./inventory_agreement.ts";
import { decideProblems, type ProblemFacts } from "./decide_problems.ts";
import type {
  ClusterStatus,
  HostStatus,
  LeaderStatus,
  PendingService,
  PoolStatus,
  PowerStatus,
  StatusModel,
  VipStatus,
} from "./status_model.ts";

export type { ClusterStatus } from "./status_model.ts";
import { compareCodeUnits } from "../text/code_unit_order.ts";
import { identityHost } from "../kube/elector_options.ts";

/** A pool above this share of its addresses in use is a problem. */
export const POOL_FULL_RATIO = 0.9;

/** Inputs of `buildClusterStatus`. */
export interface StatusInput {
  services: readonly V1Service[];
  /**
   * The pool a Service's addresses came from, as its provider recorded it on the Service
   * (`recordedPool` of `providers/mod.ts`). @default unknown: no pool shown
   */
  poolOf?: (service: V1Service) => string | undefined;
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
   * The inventory's serving hosts (`servingHostNames`: the control-plane machines and the workers
   * a pool selects, not retired): each must have reported a heartbeat; undefined when the
   * inventory is not known.
   */
  mustReport?: ReadonlySet<string>;
  /**
   * The inventory's control-plane VIPs (canonical): served with no Service. Undefined when the
   * inventory is not known: an address of an announcement that serves the control-plane VIP is
   * then one.
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
 * Builds the status model and decides its problems (`decideProblems`).
 * @param input Services, Leases, the leader Lease and the time
 * @returns the model, rows sorted, with its problems
 */
export function buildClusterStatus(input: StatusInput): ClusterStatus {
  const { status, facts } = buildStatusModel(input);
  const decided = decideProblems(status, facts);
  for (const r of status.vips) r.problem = decided.vips.get(r.vip);
  return { ...status, problems: decided.problems };
}

/**
 * Builds the status model, without judging it: what the Leases, the Services and the leader's
 * judgement say, and the facts its problems are decided from.
 * @param input Services, Leases, the leader Lease and the time
 * @returns the model (rows sorted, no VIP row's problem set) and the facts beside it
 */
export function buildStatusModel(input: StatusInput): { status: StatusModel; facts: ProblemFacts } {
  const { nowMs, observer } = input;
  const own = observeHeartbeats(input.leases, observer, true);
  const trusted = input.leaderJudgement;
  const { current: heartbeats, retired } = splitRetired(
    (trusted ? withLeaderJudgement(own, trusted.judgement, trusted.sinceMs, observer.now()) : own)
      .sort((a, b) => compareCodeUnits(a.host, b.host)),
    input.inventory,
  );

  const leader = leaderStatus(input.leaderLease, observer);
  if (trusted && leader.identity === trusted.judgement.leader) {
    // this reader saw the leader's publication change: the leader is alive, renewing
    leader.freshness = "fresh";
    leader.expired = false;
    leader.renewalSeen = true;
    leader.ageMs = trusted.sinceMs;
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
      announcers: report?.announcers ?? [],
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
    const pool = input.poolOf?.(service);
    for (const ingress of service.status?.loadBalancer?.ingress ?? []) {
      const vip = ingress.ip ? canonicalIp(ingress.ip) : undefined;
      if (!vip) continue;
      const r = row(vip);
      if (!r.services.includes(key)) r.services.push(key);
      r.pool ??= pool;
    }
  }
  const fresh = heartbeats.filter(isFresh);
  for (const h of fresh) {
    if ("error" in h.report) continue;
    for (const instance of h.report.announcements) {
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
  const partial = partialHosts(heartbeats);
  const vips = [...rows.values()].sort((a, b) => compareIpTexts(a.vip, b.vip));
  for (const r of vips) {
    r.services.sort();
    r.hosts.sort();
    r.bgpHosts.sort();
    r.states.sort((a, b) => compareCodeUnits(a.host, b.host));
    // listed by no host, announced by none, last seen on none: a cut report may hold it
    if (r.hosts.length === 0 && r.lastSeenOn.length === 0 && r.bgpHosts.length === 0) {
      r.maybeOn = partial;
    }
    if (r.hosts.length !== 1) r.since = undefined;
  }

  const known = input.controlPlaneVips ??
    (trusted?.judgement.control_plane_vips
      ? new Set(trusted.judgement.control_plane_vips)
      : undefined);

  // one inventory on every host
  const agreement = inventoryAgreement(
    heartbeats.map((h) => ({ host: h.host, fresh: isFresh(h), report: h.report })),
    leaderHost,
  );
  const otherHosts = new Set(agreement.others.map((o) => o.host));
  for (const h of hosts) h.otherInventory = otherHosts.has(h.host);

  const { power, from: powerFrom } = machinePower(
    heartbeats.filter((h) => isFresh(h) && h.host === leaderHost),
    nowMs,
  );
  const status: StatusModel = {
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
    pools: poolUsage(fresh),
    power,
    powerFrom,
    servingHosts: [...input.servingHosts ?? []],
  };
  const facts: ProblemFacts = {
    nowMs,
    dataPlaneReported: anyDataPlaneReported(heartbeats) ||
      heartbeats.some((h) => !("error" in h.report) && (h.report.bgp?.length ?? 0) > 0),
    controlPlaneVips: {
      vips: known ?? controlPlaneInstanceVips(fresh),
      known: known !== undefined,
    },
    // without the inventory, the leader's (from its judgement) says which machines must report
    mustReport: input.mustReport ??
      (trusted?.judgement.control_plane ? new Set(trusted.judgement.control_plane) : undefined),
  };
  return { status, facts };
}

/** The VIPs fresh hosts announce as the control-plane VIP (announcements that serve it). */
function controlPlaneInstanceVips(fresh: readonly Heartbeat[]): Set<string> {
  const vips = new Set<string>();
  for (const h of fresh) {
    if ("error" in h.report) continue;
    for (const instance of h.report.announcements) {
      if (instance.serves === "control-plane") {
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
