/**
 * What a provider's host side tells about this host's data plane (Keelson extension): the state
 * of each announcing instance, the VIPs really present on this host and its routing sessions, for
 * the heartbeat Lease the agent publishes (`src/agent/heartbeat.ts` turns it into the report).
 * Neutral: no daemon's vocabulary.
 *
 * @module
 */

/**
 * Where an announcing instance stands on this host: `holding` its addresses (drawing their
 * traffic), `standby` ready to take them, `failed`, `stopped`, or `unknown`; the heartbeat
 * report's words too (`src/status/host_report.ts` says how each daemon's states map to them).
 */
export type InstanceRole = "holding" | "standby" | "failed" | "stopped" | "unknown";

/** One announcing instance (e.g. a VRRP instance) on this host. */
export interface AnnouncingInstance {
  /** The announcer that runs it, as the provider names it. */
  announcer: string;
  /** Its name in its daemon's file. */
  name: string;
  role: InstanceRole;
  /** How the role was learned: the daemon told (`daemon`), or inferred from the interface. */
  observedFrom: "daemon" | "addresses";
  /** When it took this role (ISO 8601). */
  since: string;
  /** The addresses it serves while holding. */
  addresses: string[];
  /** What its addresses are: the control-plane VIP, or Services' VIPs. */
  serves: "control-plane" | "services";
}

/** One routing session (e.g. BGP) of this host and what it exports over it. */
export interface RoutingSession {
  /** The peer's name in the inventory. */
  peer: string;
  established: boolean;
  /** Prefixes exported to the peer, canonical, sorted. */
  routes: string[];
}

/** The data plane of this host at one moment. */
export interface DataPlaneSnapshot {
  instances: AnnouncingInstance[];
  /** VIPs (rendered by Keelson) present on the interface, with the time each appeared. */
  vips: { ip: string; since: string }[];
  /** Routing sessions and what this host exports over each; absent where none runs. */
  sessions?: RoutingSession[];
}

/**
 * Outcome of the last config apply of the host's daemon (`none` before the first; `not_running`:
 * written, but no daemon runs to load it).
 */
export type ApplyState = "success" | "invalid" | "error" | "unchanged" | "not_running" | "none";

/** The outcome of one announcer's last config apply on this host. */
export interface AnnouncerApply {
  /** The announcer, as the provider names it. */
  announcer: string;
  result: ApplyState;
}

/** This host's data plane, as the host side observes it. */
export interface HostDataPlane {
  /** @returns the data plane now */
  snapshot(): DataPlaneSnapshot;
  /**
   * Calls `listener` after every change of the snapshot.
   * @returns unsubscribe
   */
  subscribe(listener: () => void): () => void;
  /** @returns the outcome of each running announcer's last config apply, in start order */
  applies(): AnnouncerApply[];
}
