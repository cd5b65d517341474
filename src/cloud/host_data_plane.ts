/**
 * What a provider's host side tells about this host's data plane (Keelson extension): the state
 * of each announcing instance and the VIPs really present on this host, for the heartbeat Lease
 * the agent publishes (`src/kube/host_heartbeat.ts`).
 *
 * @module
 */
import type { BgpPeerReport, InstanceReport } from "../status/host_report.ts";

/** The data plane of this host at one moment. */
export interface DataPlaneSnapshot {
  instances: InstanceReport[];
  /** VIPs (rendered by Keelson) present on the interface, with the time each appeared. */
  vips: { ip: string; since: string }[];
  /** BGP sessions and what this host exports over each; absent where BIRD does not run. */
  bgp?: BgpPeerReport[];
}

/**
 * Outcome of the last config apply of the host's daemon (`none` before the first; `not_running`:
 * written, but no daemon runs to load it).
 */
export type ApplyState = "success" | "invalid" | "error" | "unchanged" | "not_running" | "none";

/** This host's data plane, as the host side observes it. */
export interface HostDataPlane {
  /** @returns the data plane now */
  snapshot(): DataPlaneSnapshot;
  /**
   * Calls `listener` after every change of the snapshot.
   * @returns unsubscribe
   */
  subscribe(listener: () => void): () => void;
  /** @returns the outcome of the last config apply */
  lastApply(): ApplyState;
}
