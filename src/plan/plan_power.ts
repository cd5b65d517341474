/**
 * Machines' power as `keelson plan` shows it: from the heartbeat Leases its input holds (a
 * snapshot's, or the live read's), in the report the leader publishes (only the leader polls the
 * BMCs). One read judges no freshness, and this process's clock is never set against a remote
 * one: each age is the heartbeat Lease's own `renewTime` minus the report's time, both written by
 * the same host's clock, so the difference holds whatever that clock says — "as of the
 * heartbeat's last renewal", which may itself be old.
 *
 * Which heartbeat: several may carry power (a leader that died leaves its last report until its
 * Lease is collected). The leader Lease's holder's wins when the input holds that Lease and its
 * identity (`<hostname>_<uuid>`, the hostname's first label being the host's name by default)
 * names a host with power; otherwise the one whose Lease says it was renewed latest (by each
 * writer's own clock: two hosts' clocks, never this one's). The others are named.
 *
 * @module
 */
import type { V1Lease } from "@kubernetes/client-node";
import { formatAge } from "../status/ages.ts";
import { leaderHeartbeatHost } from "../status/cluster_status.ts";
import { type HeartbeatRecord, parseHeartbeatLease } from "../status/heartbeats.ts";
import type { HostReport, PowerReport } from "../status/host_report.ts";
import { compareCodeUnits } from "../text/code_unit_order.ts";
import { terminalSafe } from "../text/terminal_safe.ts";

/** One machine's power as the plan shows it. */
export interface PlannedPower {
  machine: string;
  state: PowerReport["state"];
  /** How long it had been in this state at the heartbeat's last renewal; null without one. */
  ageMs: number | null;
  /** How long before that renewal the BMC last answered; null when never (or no renewal). */
  answerAgeMs: number | null;
  /** What was seen: the PowerState, or why there was no answer. */
  detail: string;
}

/** The machines' power in the plan's input (`-o json`: `power`). */
export interface PlanPower {
  /** The host whose heartbeat it comes from. */
  from: string;
  /** Why that one: it holds the leader Lease, or its Lease was renewed latest. */
  chosen: "leader" | "latest-renewal";
  /** That Lease's renewTime as its writer wrote it (its own clock; ISO); null when absent. */
  renewTime: string | null;
  /** Other hosts whose heartbeats carry power too (a former leader's last report), sorted. */
  alsoReporting: string[];
  /** Machines the writer left out of its report at its bounds. */
  omitted: number;
  /** Sorted by machine. */
  machines: PlannedPower[];
}

/** Where the leader-election Lease is (the inventory's `[leader_election]`). */
export interface LeaderLeaseRef {
  namespace: string;
  name: string;
}

/**
 * The machines' power the input's heartbeats carry.
 * @param leases every Lease of the input (others than heartbeats are ignored, but the leader's)
 * @param leader where the leader-election Lease is, to prefer its holder's report
 * @returns the power, or null when no readable heartbeat carries any
 */
export function planPower(
  leases: readonly V1Lease[],
  leader: LeaderLeaseRef | undefined,
): PlanPower | null {
  const carrying = leases.map(parseHeartbeatLease)
    .filter((h): h is HeartbeatRecord & { report: HostReport & { power: PowerReport[] } } =>
      h !== undefined && !("error" in h.report) && (h.report.power?.length ?? 0) > 0
    )
    .sort((a, b) =>
      (b.claimedRenewMs ?? -Infinity) - (a.claimedRenewMs ?? -Infinity) ||
      compareCodeUnits(a.host, b.host)
    );
  if (carrying.length === 0) return null;
  const holder = leaderHost(leases, leader, carrying);
  const byLeader = carrying.find((h) => h.host === holder);
  const chosen = byLeader ?? carrying[0]!;
  const renewMs = chosen.claimedRenewMs;
  const before = (iso: string | undefined) => {
    const ms = iso === undefined ? NaN : Date.parse(iso);
    // both times are the writer's; a step of its clock between them is no negative age
    return renewMs === undefined || Number.isNaN(ms) ? null : Math.max(0, renewMs - ms);
  };
  return {
    from: chosen.host,
    chosen: byLeader ? "leader" : "latest-renewal",
    renewTime: renewMs === undefined ? null : new Date(renewMs).toISOString(),
    alsoReporting: carrying.filter((h) => h !== chosen).map((h) => h.host)
      .sort(compareCodeUnits),
    omitted: chosen.report.omitted?.power ?? 0,
    machines: chosen.report.power.map((p) => ({
      machine: p.machine,
      state: p.state,
      ageMs: before(p.since),
      answerAgeMs: before(p.answered),
      detail: p.detail,
    })).sort((a, b) => compareCodeUnits(a.machine, b.machine)),
  };
}

/**
 * The host named by the leader Lease's holder identity (`<machine>_<uuid>`, or client-go's
 * `<hostname>_<uuid>`: the hostname's first label), when the input holds that Lease.
 */
function leaderHost(
  leases: readonly V1Lease[],
  leader: LeaderLeaseRef | undefined,
  heartbeats: readonly { host: string }[],
): string | undefined {
  if (!leader) return undefined;
  const lease = leases.find((l) =>
    l.metadata?.name === leader.name && (l.metadata?.namespace ?? leader.namespace) ===
      leader.namespace
  );
  const identity = lease?.spec?.holderIdentity;
  return typeof identity === "string" ? leaderHeartbeatHost(identity, heartbeats) : undefined;
}

/** What the text says when no heartbeat carries power. */
export interface PowerContext {
  /**
   * Whether an inventory gives some machine a `[machines.bmc]`: only then is the absence of
   * power said (otherwise there is none to show, and the plan stays as it was).
   */
  bmcConfigured: boolean;
  /** How many heartbeat Leases the input holds. */
  heartbeats: number;
}

/**
 * The power as text lines for `plan`'s text output, each terminal-safe.
 * @param power from `planPower`
 * @param context whether BMCs are configured and heartbeats were read
 * @returns the lines (a blank line first), or none
 */
export function formatPlanPower(power: PlanPower | null, context: PowerContext): string[] {
  if (!power) {
    if (!context.bmcConfigured) return [];
    return [
      "",
      context.heartbeats === 0
        ? "Machine power: unknown here (no heartbeat Lease in the input; a snapshot gets them " +
          "from kubectl get leases -n kube-system -o yaml)"
        : "Machine power: no heartbeat carries power (the leader polls the BMCs; was its " +
          "heartbeat read?)",
    ];
  }
  const asOf = power.renewTime === null
    ? "its Lease has no renewTime, so no age"
    : `ages as of its last renewal, ${power.renewTime} by its own clock`;
  const lines = [
    "",
    `Machine power (from ${power.from}'s heartbeat, ${
      power.chosen === "leader" ? "the leader's" : "renewed latest"
    }; ${asOf}):`,
  ];
  const width = Math.max(...power.machines.map((m) => m.machine.length));
  for (const m of power.machines) {
    const head = `  ${m.machine.padEnd(width)}  ${m.state.padEnd(7)}`;
    if (power.renewTime === null || m.ageMs === null) {
      lines.push(`${head}  ${m.detail}`);
      continue;
    }
    const answer = m.answerAgeMs === null
      ? "BMC never answered"
      : `BMC last answered ${formatAge(m.answerAgeMs)} before`;
    lines.push(`${head}  for ${formatAge(m.ageMs)}, ${answer}: ${m.detail}`);
  }
  if (power.omitted > 0) {
    lines.push(`  (${power.omitted} more machines left out of the report at its size bound)`);
  }
  if (power.alsoReporting.length > 0) {
    lines.push(
      `  not shown: the power in the heartbeat of ${
        power.alsoReporting.join(", ")
      } (a former leader's last report)`,
    );
  }
  // the report is checked strictly (printable ASCII), but what is shown is escaped all the same
  return lines.map(terminalSafe);
}

/**
 * How many heartbeat Leases there are among `leases`.
 * @param leases any Leases
 * @returns the count of `keelson-host-*` Leases naming a valid host
 */
export function countHeartbeats(leases: readonly V1Lease[]): number {
  return leases.filter((l) => parseHeartbeatLease(l) !== undefined).length;
}
