/**
 * The seam between the bare-metal provider's host side and the daemons that announce its
 * addresses from this host: keepalived (VRRP) today, BIRD (BGP) next to it. The provider owns a
 * list of them; each renders its daemon's config from the inventory and the Services' ingress
 * addresses, and applies it.
 *
 * @module
 */
import type { V1Service } from "@kubernetes/client-node";
import type { Lister } from "../../src/kube/ports.ts";

/** Where an announcer reads Services from, once a Kubernetes connection exists. */
export interface ServiceSource {
  services: Lister<V1Service>;
  hasSynced(): boolean;
}

/** One daemon this host announces addresses through. */
export interface HostAnnouncer {
  /** The daemon, for logs (`keepalived`, `bird`). */
  readonly name: string;
  /**
   * Renders and applies now (the inventory or the Services changed). Before a Service source is
   * connected it must keep the Service addresses it already announces.
   * @param reason for the log
   */
  sync(reason: string): Promise<unknown>;
  /** Connects the synced Service cache and renders. */
  setServiceSource(source: ServiceSource): Promise<unknown>;
  /** Resolves when the announcer's loops have stopped (after the host side's signal aborts). */
  readonly finished: Promise<void>;
}
