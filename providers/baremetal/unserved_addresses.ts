/**
 * The leader's Warning Event for each Service address keepalived will not serve (not in a pool
 * Keelson serves, a machine's address, the control-plane VIP): the hosts log it and count it in
 * `keelson_keepalived_skipped_addresses`; the Service's owner sees it with `kubectl describe`.
 * Each address is reported once until it changes. A Service event checks that Service alone; a
 * new configuration (or a new leader) checks every Service once.
 *
 * @module
 */
import type { V1Service } from "@kubernetes/client-node";
import type { Config } from "../../src/config/types.ts";
import type { EventRecorder, Lister } from "../../src/kube/ports.ts";
import { objectKey } from "../../src/kube/ports.ts";
import {
  type AddressVerdict,
  servedAddressChecker,
  servedServiceAddresses,
  type SkippedAddress,
} from "./keepalived/served_addresses.ts";

/** Event reason on a Service whose status holds an address keepalived will not serve. */
export const REASON_ADDRESS_NOT_SERVED = "AddressNotServed";

/** Reports unserved addresses as Warning Events, once each. */
export class UnservedAddressReporter {
  /** Per Service key: the `value reason` pairs reported and still true. */
  #reported = new Map<string, Set<string>>();
  /** The configuration the last whole pass checked against, and its address check. */
  #checked?: { config: Config; check: (text: string) => AddressVerdict };
  /** Service keys changed since the last pass; `all` = check every Service. */
  #dirty = new Set<string>();
  #all = false;
  #queued = false;

  /**
   * Reports on the next microtask; calls made in one burst share one pass. With `key`, only that
   * Service is checked again (one pass over every Service per informer event would cost O(N^2)
   * over a burst); without it, or when the configuration changed, every Service is.
   * @param read the configuration in force and the Service cache, read when the pass runs
   * @param events the leader's recorder; undefined when this process does not lead
   * @param key the Service that changed (`namespace/name`), or undefined for all
   */
  schedule(
    read: () => { config: Config; services: Lister<V1Service> },
    events: () => EventRecorder | undefined,
    key?: string,
  ): void {
    if (key === undefined) this.#all = true;
    else this.#dirty.add(key);
    if (this.#queued) return;
    this.#queued = true;
    queueMicrotask(() => {
      this.#queued = false;
      const all = this.#all;
      const keys = this.#dirty;
      this.#all = false;
      this.#dirty = new Set();
      // a follower keeps no state: the whole pass when it starts leading covers everything
      const recorder = events();
      if (!recorder) return;
      const { config, services } = read();
      if (all || this.#checked?.config !== config) {
        this.report(config, services.list(), recorder);
        return;
      }
      for (const k of keys) this.#reportOne(k, services.get(k), recorder);
    });
  }

  /**
   * Checks every Service: emits one Warning per address not reported before.
   * @param config the configuration in force
   * @param services every Service in the cache
   * @param events the recorder
   * @returns how many events were emitted
   */
  report(config: Config, services: readonly V1Service[], events: EventRecorder): number {
    const check = servedAddressChecker(config);
    this.#checked = { config, check };
    const byKey = new Map(services.map((s) => [objectKey(s), s]));
    const skipped = new Map<string, SkippedAddress[]>();
    for (const entry of servedServiceAddresses(config, services, check).skipped) {
      if (entry.service === undefined) continue;
      const list = skipped.get(entry.service);
      if (list) list.push(entry);
      else skipped.set(entry.service, [entry]);
    }
    let emitted = 0;
    const before = this.#reported;
    this.#reported = new Map();
    for (const [key, list] of skipped) {
      emitted += this.#emit(byKey.get(key), list, before.get(key), events);
    }
    return emitted;
  }

  #reportOne(key: string, service: V1Service | undefined, events: EventRecorder): void {
    const before = this.#reported.get(key);
    this.#reported.delete(key);
    if (service === undefined) return;
    const list = servedServiceAddresses(this.#checked!.config, [service], this.#checked!.check)
      .skipped;
    this.#emit(service, list, before, events);
  }

  /** Emits the Warnings of one Service not in `before`; records what is now skipped. */
  #emit(
    object: V1Service | undefined,
    skipped: readonly SkippedAddress[],
    before: Set<string> | undefined,
    events: EventRecorder,
  ): number {
    if (object === undefined || skipped.length === 0) return 0;
    const now = new Set<string>();
    let emitted = 0;
    for (const { service, value, reason } of skipped) {
      const pair = `${value} ${reason}`;
      now.add(pair);
      if (before?.has(pair)) continue;
      events.event(
        { kind: "Service", apiVersion: "v1", metadata: object.metadata ?? {} },
        "Warning",
        REASON_ADDRESS_NOT_SERVED,
        `Not serving address ${JSON.stringify(value)} of service "${service}": ${reason}; ` +
          "keepalived serves only addresses of Keelson's pools (the rest of the Services are " +
          "served); change the Service's address or add it to a pool",
      );
      emitted++;
    }
    this.#reported.set(objectKey(object), now);
    return emitted;
  }
}
