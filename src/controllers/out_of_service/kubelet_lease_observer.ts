/**
 * What this process sees of the kubelets' Leases (`kube-node-lease/<node>`): when, by its own
 * monotonic clock, it last saw each one change (any write changes its `resourceVersion`; a
 * kubelet renewing writes `renewTime`). The times written into a Lease are the kubelet's clock
 * and are never read as times.
 *
 * A Lease as it was when this reader first listed them was written at an unknown time: it counts
 * as "never seen changing" until it changes. A Lease created after that first list was written
 * while this reader watched: that is a change. A relist (after a watch expired) that brings a new
 * version counts as a change when it arrives, later than the write: a witness that sees a renewal
 * late only ever makes a Lease look younger.
 *
 * Memory is one small record per Lease, and the two most recent changes (of different Leases),
 * so "another kubelet renewed lately" is answered without scanning every Lease.
 *
 * A listener is told of a Lease that appears, goes, changes its duration or is seen changing
 * for the first time; not of each renewal after that: a renewal only makes a Lease look younger,
 * which holds an action back, and every action is judged again when its time comes.
 *
 * @module
 */
import type { V1Lease } from "@kubernetes/client-node";
import type { Informer, InformerEvent } from "../../kube/ports.ts";
import { monotonicNow } from "../../status/observed_freshness.ts";
import type { KubeletLeaseView } from "./decide_power_loss.ts";

interface Seen {
  version: string;
  /** When this reader saw it change; undefined: not since its first list. */
  changedAt: number | undefined;
  leaseDurationSeconds: number | undefined;
}

interface Change {
  name: string;
  at: number;
}

/** Remembers when each kubelet Lease last changed, by this reader's clock. */
export class KubeletLeaseObserver {
  readonly #leases: Informer<V1Lease>;
  readonly #now: () => number;
  readonly #seen = new Map<string, Seen>();
  /** The latest change, and the latest of another Lease than its. */
  #latest: Change | undefined;
  #previous: Change | undefined;
  #listener: ((node: string) => void) | undefined;

  /**
   * @param leases the informer of `kube-node-lease`
   * @param now this reader's monotonic clock (ms). @default performance.now
   */
  constructor(leases: Informer<V1Lease>, now: () => number = monotonicNow) {
    this.#leases = leases;
    this.#now = now;
  }

  /**
   * Starts observing: what the cache holds now is the baseline (never seen changing).
   * @param listener told the Node's name when what `view` says of it may have changed in kind
   * @returns stops observing
   */
  start(listener?: (node: string) => void): () => void {
    this.#listener = listener;
    const unsubscribe = this.#leases.subscribe((event) => this.#on(event));
    if (this.#leases.hasSynced()) {
      for (const lease of this.#leases.list()) this.#note(lease, false);
    }
    return unsubscribe;
  }

  /**
   * What this reader saw of a Node's kubelet Lease.
   * @param node the Node's name (its kubelet's Lease has the same name)
   * @returns the view, or undefined when there is no such Lease or the cache has not synced
   */
  view(node: string): KubeletLeaseView | undefined {
    if (!this.#leases.hasSynced()) return undefined;
    const seen = this.#seen.get(node);
    if (seen === undefined) return undefined;
    const now = this.#now();
    const other = this.#latest?.name !== node ? this.#latest : this.#previous;
    return {
      changedAgoMs: seen.changedAt === undefined ? undefined : Math.max(0, now - seen.changedAt),
      leaseDurationSeconds: seen.leaseDurationSeconds,
      otherChangedAgoMs: other === undefined ? undefined : Math.max(0, now - other.at),
    };
  }

  #on(event: InformerEvent<V1Lease>): void {
    if (event.type === "delete") {
      const name = event.object.metadata?.name;
      if (name !== undefined && this.#seen.delete(name)) this.#listener?.(name);
      return;
    }
    // before the first complete list, everything is the baseline; afterwards a new Lease was
    // written while this reader watched
    this.#note(event.object, this.#leases.hasSynced());
  }

  #note(lease: V1Lease, watching: boolean): void {
    const name = lease.metadata?.name;
    if (name === undefined || name === "") return;
    const version = lease.metadata?.resourceVersion ?? "";
    const duration = lease.spec?.leaseDurationSeconds;
    const leaseDurationSeconds = typeof duration === "number" && Number.isInteger(duration)
      ? duration
      : undefined;
    const seen = this.#seen.get(name);
    if (seen === undefined) {
      const changedAt = watching ? this.#now() : undefined;
      this.#seen.set(name, { version, changedAt, leaseDurationSeconds });
      if (changedAt !== undefined) this.#changed(name, changedAt);
      if (watching) this.#listener?.(name);
      return;
    }
    const durationChanged = seen.leaseDurationSeconds !== leaseDurationSeconds;
    seen.leaseDurationSeconds = leaseDurationSeconds;
    if (seen.version === version) {
      // a resync or relist of the same version
      if (durationChanged) this.#listener?.(name);
      return;
    }
    const first = seen.changedAt === undefined;
    seen.version = version;
    seen.changedAt = this.#now();
    this.#changed(name, seen.changedAt);
    if (first || durationChanged) this.#listener?.(name);
  }

  #changed(name: string, at: number): void {
    if (this.#latest?.name !== name) this.#previous = this.#latest;
    this.#latest = { name, at };
  }
}
