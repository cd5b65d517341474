/**
 * The problems of a status model, decided apart from building it: no leader, a silent host, an
 * unreadable report, a failing reload or apply, every BGP session down, a VIP served by no host or
 * by two (split brain) or whose host is unknown, an address served that no Service holds, a
 * control-plane machine that never reported, a host on another inventory, a full pool, a machine
 * whose power is unknown, a pool no host can serve, a Service VIP held only by hosts that do not
 * serve its pool (`pool_servers.ts`). Pure: the model and a few facts in, the sentences and each VIP row's
 * problem out, in the order `keelson status` prints them.
 *
 * @module
 */
import { claimedAge, claimedAgo, formatAge } from "./ages.ts";
import { shortDigest } from "./inventory_agreement.ts";
import { heartbeatCleanupCommand } from "./retired_heartbeats.ts";
import { unservedPoolProblems, vipServingProblems } from "./pool_servers.ts";
import type { StatusModel, VipProblem, VipStatus } from "./status_model.ts";
import { compareCodeUnits } from "../text/code_unit_order.ts";

/** What the problems are judged from besides the model. */
export interface ProblemFacts {
  /** This reader's wall clock (ms since the epoch): only to show the writers' claims beside. */
  nowMs: number;
  /**
   * Whether any host reports a data plane (a keepalived instance or a BGP session): while none
   * does (no keepalived under Keelson), a VIP listed by no host is not judged.
   */
  dataPlaneReported: boolean;
  /**
   * The control-plane VIPs (canonical), served with no Service; `known` when they come from the
   * inventory or the leader's judgement, not guessed from keepalived instance names (only then is
   * an address announced over BGP told apart from a control-plane VIP).
   */
  controlPlaneVips: { vips: ReadonlySet<string>; known: boolean };
  /** The serving hosts that must have reported; undefined when not known. */
  mustReport: ReadonlySet<string> | undefined;
}

/** The problems of a model. */
export interface StatusProblems {
  /** One sentence per problem; empty when healthy. */
  problems: string[];
  /** Each VIP row's problem, by VIP; a row not listed has none. */
  vips: Map<string, VipProblem>;
}

/**
 * Decides the problems of a status model.
 * @param status the model (its VIP rows' `problem` is not read)
 * @param facts the clock and what the inventory or the leader says beside the model
 * @returns the sentences and the VIP rows' problems
 */
export function decideProblems(status: StatusModel, facts: ProblemFacts): StatusProblems {
  const vips = new Map<string, VipProblem>();
  const problems = [
    ...leaderProblems(status.leader),
    ...status.hosts.flatMap((h) => hostProblems(h, status.inventoryKnown, facts.nowMs)),
    ...vipProblems(status, facts.dataPlaneReported, vips),
    ...unheldAddressProblems(status.vips, facts.controlPlaneVips, vips),
    ...[...facts.mustReport ?? []].sort(compareCodeUnits)
      .filter((machine) => !status.hosts.some((h) => h.host === machine))
      .map((machine) => `serving host ${machine} has never reported (no heartbeat Lease)`),
    ...inventoryProblems(status.inventory, facts.nowMs),
    ...status.pools.filter((p) => p.full).map((p) =>
      `pool ${p.pool} (${p.family}) is ${Math.round((p.used / p.total) * 100)}% used ` +
      `(${p.used} of ${p.total})`
    ),
    ...status.power.filter((p) => p.state === "unknown")
      .map((p) => `machine ${p.machine}: power unknown (${p.detail})`),
    ...unservedPoolProblems(status.servingHosts),
    ...vipServingProblems(status.servingHosts, status.vips),
  ];
  return { problems, vips };
}

function leaderProblems(leader: StatusModel["leader"]): string[] {
  if (!leader.identity) return ["no leader: the leader-election Lease has no holder"];
  if (leader.expired) return [`no leader: ${leader.identity} stopped renewing the Lease`];
  return [];
}

function hostProblems(
  h: StatusModel["hosts"][number],
  inventoryKnown: boolean,
  nowMs: number,
): string[] {
  const problems: string[] = [];
  if (h.silent) {
    problems.push(
      `host ${h.host} is silent: ${
        h.renewalSeen
          ? `no heartbeat for ${formatAge(h.ageMs)}`
          : `its heartbeat did not change in the ${formatAge(h.ageMs)} watched`
      } (lease ${formatAge(h.leaseMs)}${
        h.renewalSeen ? "" : `; ${claimedAge(h.lastHeartbeat, nowMs)}`
      })` + (inventoryKnown
        ? ""
        : ` (if it was removed from the inventory: ${
          heartbeatCleanupCommand(h.host)
        }; --config tells retired hosts apart)`),
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
      `host ${h.host}: every BGP session is down (${(h.bgp ?? []).map((p) => p.peer).join(", ")})`,
    );
  }
  for (const { name, apply } of h.announcers) {
    if (apply === "invalid" || apply === "error") {
      problems.push(`host ${h.host}: the last ${name} config apply was ${apply}`);
    }
    if (!h.silent && apply === "not_running") {
      problems.push(
        `host ${h.host}: ${name} is not running (its last config was written, not loaded)`,
      );
    }
  }
  return problems;
}

/** No host, an unknown host, two hosts: each VIP row's serving problem. */
function vipProblems(
  status: StatusModel,
  dataPlaneReported: boolean,
  decided: Map<string, VipProblem>,
): string[] {
  const silentHosts = new Set(status.hosts.filter((h) => h.silent).map((h) => h.host));
  const problems: string[] = [];
  for (const r of status.vips) {
    if (r.hosts.length === 0 && r.lastSeenOn.length > 0) {
      decided.set(r.vip, "unknown");
      const allSilent = r.lastSeenOn.every((h) => silentHosts.has(h));
      problems.push(
        `VIP ${r.vip}${forServices(r)} was last reported on ${r.lastSeenOn.join(", ")}, ${
          allSilent ? "which went silent" : "not seen renewing its heartbeat"
        }: whether it is served is unknown`,
      );
    } else if (r.hosts.length === 0 && r.bgpHosts.length > 0) {
      // announced over BGP (by one or, ECMP, by every healthy host): served
    } else if (r.hosts.length === 0 && r.maybeOn.length > 0) {
      decided.set(r.vip, "unknown");
      problems.push(
        `VIP ${r.vip}${forServices(r)} is listed by no host, but the report of ${
          r.maybeOn.join(", ")
        } was cut at its size limit: whether it is served is unknown`,
      );
    } else if (r.hosts.length === 0 && dataPlaneReported) {
      decided.set(r.vip, "no-host");
      problems.push(`VIP ${r.vip}${forServices(r)} is served by no host`);
    } else if (r.hosts.length > 1) {
      decided.set(r.vip, "split-brain");
      problems.push(
        `VIP ${r.vip}${forServices(r)} is served by ${r.hosts.length} hosts (split brain): ${
          r.hosts.join(", ")
        }`,
      );
    }
  }
  return problems;
}

/** Addresses served that no Service holds and that are no control-plane VIP. */
function unheldAddressProblems(
  rows: readonly VipStatus[],
  controlPlaneVips: ProblemFacts["controlPlaneVips"],
  decided: Map<string, VipProblem>,
): string[] {
  const problems: string[] = [];
  for (const r of rows) {
    if (r.services.length > 0 || controlPlaneVips.vips.has(r.vip)) continue;
    // without the inventory a control-plane VIP announced over BGP looks like any address
    const servers = [
      ...new Set([...r.hosts, ...r.superseded, ...(controlPlaneVips.known ? r.bgpHosts : [])]),
    ].sort();
    if (servers.length === 0) continue;
    if (!decided.has(r.vip)) decided.set(r.vip, "no-service");
    problems.push(
      `${servers.length === 1 ? "host" : "hosts"} ${servers.join(", ")} ${
        servers.length === 1 ? "serves" : "serve"
      } ${r.vip}, which no Service holds and which is no control-plane VIP`,
    );
  }
  return problems;
}

function inventoryProblems(inventory: StatusModel["inventory"], nowMs: number): string[] {
  const ref = inventory.reference;
  return inventory.others.map((o) =>
    `host ${o.host} runs another inventory (sha256 ${shortDigest(o.sha256)}, ${
      claimedAgo(o.since, nowMs) ?? "?"
    } by its clock) than ${
      ref === undefined
        ? "the other hosts (no digest has most hosts)"
        : ref.from === "leader"
        ? `the leader ${ref.host} (sha256 ${shortDigest(ref.sha256)})`
        : `most hosts (sha256 ${shortDigest(ref.sha256)})`
    }`
  );
}

function forServices(r: VipStatus): string {
  return r.services.length > 0 ? ` (${r.services.join(", ")})` : "";
}
