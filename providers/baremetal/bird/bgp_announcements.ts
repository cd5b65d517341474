/**
 * This host's BGP announcements in the provider contract's words (`AnnouncingInstance`,
 * `src/cloud/host_data_plane.ts`), as keepalived reports its VRRP instances: one per VIP static
 * protocol of the model BIRD accepted, with the state it stands in and since when. The heartbeat
 * thereby says, whatever the daemon, which announcements each host runs and where each stands.
 *
 * The mapping (the states' meanings are `src/status/host_report.ts`'s):
 * - `holding`: at least one peer that exports the protocol has its session Established: the
 *   routers draw the VIPs' traffic here (beside every other host that holds them: anycast is
 *   normal for BGP, so several holders are no problem, unlike VRRP);
 * - `failed`: none of its exporting peers is Established. Also a protocol exported to no peer
 *   (the peers' `pools` leave its pool out, or its only peer was left out of the model because
 *   its password could not be read): no session could carry it, so nothing draws its traffic
 *   here until the inventory or the secret is repaired; "standby" would say it is ready to;
 * - `unknown`: BIRD did not answer the last poll (or none ran yet): no session's state is known,
 *   and a silent control socket is not guessed to mean routes withdrawn.
 *
 * Not reported: pod-CIDR protocols (no VIPs), and a static with no route (the model builds none;
 * it would hold no address to report). A VIP withdrawn on purpose (draining, no local endpoint
 * of a Local Service, the control-plane VIP while the apiserver is not ready) is not in the
 * model, so no announcement lists it: `standby` is not reported by BIRD. `stopped` is not either:
 * BIRD shows a disabled protocol `down`, as one that could not start, and Keelson disables none.
 *
 * `since` is when an announcement last changed state by the tracker's clock, kept per protocol
 * name (a change of its VIPs alone is no new state, as for a VRRP instance).
 *
 * @module
 */
import type { AnnouncingInstance, InstanceRole } from "../../../src/cloud/host_data_plane.ts";
import { compareIps, formatIp } from "../../../src/net/ip.ts";
import type { BirdModel } from "./model.ts";

/** What the announcements are judged from of BIRD's sessions (`SessionMonitor`). */
export interface BgpSessionStates {
  /** Whether the last poll of BIRD's control socket was answered. */
  readonly reachable: boolean;
  /**
   * Whether the session to a peer was Established at the last poll.
   * @param peer the peer's name in the inventory
   */
  established(peer: string): boolean;
}

/** Each announcement's state and when it took it (ISO 8601), by protocol name. */
export type BgpAnnouncementHistory = ReadonlyMap<string, { role: InstanceRole; since: string }>;

/**
 * The announcements of a model at one moment. Pure: the history in, the next history out.
 * @param input the model BIRD accepted (undefined: none yet), the sessions, the announcer's name
 *   (as the provider calls it), the previous history and the time now (ISO 8601)
 * @returns one announcement per VIP static protocol, in the model's order (by name), each with its
 *   VIPs canonical in address order; and the history to pass next time (only these protocols)
 */
export function bgpAnnouncements(input: {
  model: BirdModel | undefined;
  sessions: BgpSessionStates;
  announcer: string;
  previous: BgpAnnouncementHistory;
  now: string;
}): {
  instances: AnnouncingInstance[];
  history: Map<string, { role: InstanceRole; since: string }>;
} {
  const { model, sessions, previous, now } = input;
  const history = new Map<string, { role: InstanceRole; since: string }>();
  const instances: AnnouncingInstance[] = [];
  for (const statik of model?.statics ?? []) {
    if (statik.kind === "pod" || statik.routes.length === 0) continue;
    const exporters = model!.peers.filter((p) => p.exports.includes(statik.name));
    const role: InstanceRole = exporters.length === 0
      ? "failed"
      : !sessions.reachable
      ? "unknown"
      : exporters.some((p) => sessions.established(p.label))
      ? "holding"
      : "failed";
    const before = previous.get(statik.name);
    const since = before?.role === role ? before.since : now;
    history.set(statik.name, { role, since });
    instances.push({
      announcer: input.announcer,
      name: statik.name,
      role,
      observedFrom: "daemon",
      since,
      addresses: statik.routes.map((r) => r.prefix).sort(compareIps)
        .map((p) => formatIp(p.family, p.value)),
      serves: statik.kind === "control-plane" ? "control-plane" : "services",
    });
  }
  return { instances, history };
}

/** Keeps the history of `bgpAnnouncements` between reads, with its clock. */
export class BgpAnnouncementTracker {
  readonly #announcer: string;
  readonly #now: () => number;
  #history: BgpAnnouncementHistory = new Map();

  /**
   * @param announcer the announcer's name, as the provider calls it
   * @param now the clock. @default Date.now
   */
  constructor(announcer: string, now: () => number = Date.now) {
    this.#announcer = announcer;
    this.#now = now;
  }

  /**
   * The announcements now; a state that differs from the last read's starts its `since` now.
   * @param model the model BIRD accepted (undefined: none yet)
   * @param sessions BIRD's sessions as last polled
   */
  read(model: BirdModel | undefined, sessions: BgpSessionStates): AnnouncingInstance[] {
    const { instances, history } = bgpAnnouncements({
      model,
      sessions,
      announcer: this.#announcer,
      previous: this.#history,
      now: new Date(this.#now()).toISOString(),
    });
    this.#history = history;
    return instances;
  }
}
