/**
 * Which host serves each VIP, and what to tell the Services about it: the leader feeds this the
 * Services' VIPs and the hosts serving each (from the heartbeats) at every change, and gets back
 * the Events to record. Pure and deterministic; time comes in as an argument.
 *
 * - one host, different from the last one seen (or after a problem): Normal `VIPHostChanged`,
 *   "VIP 10.0.20.100 now served by cp-2";
 * - no host, or several, for longer than `graceMs` (a failover passes through a short gap, and
 *   heartbeats arrive a moment apart): Warning `VIPNotServed` or `VIPSplitBrain`, once per problem.
 *
 * The first host seen for a VIP while this leader starts (until every heartbeat is judged:
 * `settling`) is recorded without an Event, so a change of leader does not repeat history. A VIP
 * whose only known host went silent (or is not yet seen renewing) is neither served nor unserved
 * as far as anyone knows: no Event (the missing heartbeat has its own alert).
 *
 * @module
 */
import { compareCodeUnits } from "../../text/code_unit_order.ts";

/** Reasons of the Events (also in the README). */
export const VIP_HOST_CHANGED = "VIPHostChanged";
/** Warning: no host serves the VIP. */
export const VIP_NOT_SERVED = "VIPNotServed";
/** Warning: more than one host serves the VIP. */
export const VIP_SPLIT_BRAIN = "VIPSplitBrain";

/** One VIP as seen now: the Services using it and the hosts serving it. */
export interface VipObservation {
  vip: string;
  /** `namespace/name` of every Service with this VIP in its status. */
  services: string[];
  /** Hosts whose fresh heartbeat lists the VIP, sorted. */
  hosts: string[];
  /**
   * Silent hosts whose last heartbeat listed it: with no fresh host, whether the VIP is served is
   * unknown (no Warning; the missing heartbeat is its own alert). @default []
   */
  lastSeenOn?: string[];
  /**
   * With several hosts: when (the caller's clock) the second of them began to list it, if the
   * caller saw it. A split brain confirmed only at the earlier host's next renewal has lasted
   * since then, so its grace runs from there. @default the step that first sees several hosts
   */
  contestedSinceMs?: number;
}

/** An Event to record on a Service. */
export interface VipEvent {
  service: string;
  vip: string;
  type: "Normal" | "Warning";
  reason: string;
  message: string;
}

interface VipState {
  single: string | undefined;
  problem: { kind: "none" | "split"; since: number; reported: boolean } | undefined;
}

/** Remembers each VIP's last host and open problem between calls. */
export class VipHostDecider {
  #states = new Map<string, VipState>();
  #graceMs: number;
  #started = false;

  /** @param graceMs how long no host or several hosts must last before a Warning */
  constructor(graceMs = 3000) {
    this.#graceMs = graceMs;
  }

  /**
   * Compares the observation with the previous ones.
   * @param observations every VIP of the Services Keelson handles
   * @param nowMs current time (any monotonic clock)
   * @param options `settling`: the caller has not judged every host yet (it just started); a
   *   VIP's first host is then recorded without an Event, as at the first step
   * @returns the Events to record, in VIP order
   */
  step(
    observations: readonly VipObservation[],
    nowMs: number,
    options: { settling?: boolean } = {},
  ): VipEvent[] {
    const events: VipEvent[] = [];
    const initial = !this.#started;
    if (!options.settling) this.#started = true;
    const seen = new Set<string>();
    for (const o of [...observations].sort((a, b) => compareCodeUnits(a.vip, b.vip))) {
      seen.add(o.vip);
      let state = this.#states.get(o.vip);
      if (!state) {
        state = { single: undefined, problem: undefined };
        this.#states.set(o.vip, state);
      }
      const emit = (type: VipEvent["type"], reason: string, message: string) => {
        for (const service of o.services) {
          events.push({ service, vip: o.vip, type, reason, message });
        }
      };
      if (o.hosts.length === 1) {
        const host = o.hosts[0]!;
        const hadProblem = state.problem?.reported === true;
        const firstHost = initial && state.single === undefined && !hadProblem;
        if ((state.single !== host || hadProblem) && !firstHost) {
          emit("Normal", VIP_HOST_CHANGED, `VIP ${o.vip} now served by ${host}`);
        }
        state.single = host;
        state.problem = undefined;
        continue;
      }
      if (o.hosts.length === 0 && (o.lastSeenOn ?? []).length > 0) {
        // unknown, not "no host": its last known host stopped reporting
        state.problem = undefined;
        continue;
      }
      const kind = o.hosts.length === 0 ? "none" : "split";
      if (state.problem?.kind !== kind) {
        const since = kind === "split" && o.contestedSinceMs !== undefined
          ? Math.min(nowMs, o.contestedSinceMs)
          : nowMs;
        state.problem = { kind, since, reported: false };
      }
      if (!state.problem.reported && nowMs - state.problem.since >= this.#graceMs) {
        state.problem.reported = true;
        if (kind === "none") {
          emit("Warning", VIP_NOT_SERVED, `VIP ${o.vip} is served by no host`);
        } else {
          emit(
            "Warning",
            VIP_SPLIT_BRAIN,
            `VIP ${o.vip} is served by ${o.hosts.length} hosts at once (split brain): ${
              o.hosts.join(", ")
            }`,
          );
        }
      }
    }
    for (const vip of [...this.#states.keys()]) if (!seen.has(vip)) this.#states.delete(vip);
    return events;
  }

  /**
   * The time of the next pending Warning, so the caller can wake up for it.
   * @returns ms since the epoch, or undefined when nothing is pending
   */
  nextDeadline(): number | undefined {
    let next: number | undefined;
    for (const state of this.#states.values()) {
      if (state.problem && !state.problem.reported) {
        const at = state.problem.since + this.#graceMs;
        if (next === undefined || at < next) next = at;
      }
    }
    return next;
  }
}
