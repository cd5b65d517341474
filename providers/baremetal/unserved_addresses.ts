/**
 * The leader's Warning Event for each Service address keepalived will not serve (not in a pool
 * Keelson serves, a machine's address, the control-plane VIP): the hosts log it and count it in
 * `keelson_keepalived_skipped_addresses`; the Service's owner sees it with `kubectl describe`.
 * Each address is reported once until it changes; a burst of Service events shares one pass.
 *
 * @module
 */
import type { V1Service } from "@kubernetes/client-node";
import type { Config } from "../../src/config/types.ts";
import type { EventRecorder } from "../../src/kube/ports.ts";
import { objectKey } from "../../src/kube/ports.ts";
import { servedServiceAddresses } from "./keepalived/served_addresses.ts";

/** Event reason on a Service whose status holds an address keepalived will not serve. */
export const REASON_ADDRESS_NOT_SERVED = "AddressNotServed";

/** Reports unserved addresses as Warning Events, once each. */
export class UnservedAddressReporter {
  #reported = new Set<string>();
  #queued = false;

  /**
   * Reports on the next microtask; calls made in one burst share one pass (each pass reads
   * every Service, so one per informer event would cost O(N²)).
   * @param read the configuration in force and every Service, read when the pass runs
   * @param events the leader's recorder; undefined when this process does not lead
   */
  schedule(
    read: () => { config: Config; services: readonly V1Service[] },
    events: () => EventRecorder | undefined,
  ): void {
    if (this.#queued) return;
    this.#queued = true;
    queueMicrotask(() => {
      this.#queued = false;
      const recorder = events();
      if (recorder) {
        const { config, services } = read();
        this.report(config, services, recorder);
      }
    });
  }

  /**
   * Emits one Warning per address not reported before.
   * @param config the configuration in force
   * @param services every Service in the cache
   * @param events the recorder
   * @returns how many events were emitted
   */
  report(config: Config, services: readonly V1Service[], events: EventRecorder): number {
    const byKey = new Map(services.map((s) => [objectKey(s), s]));
    const now = new Set<string>();
    let emitted = 0;
    for (const { service, value, reason } of servedServiceAddresses(config, services).skipped) {
      const key = `${service} ${value} ${reason}`;
      now.add(key);
      const object = service === undefined ? undefined : byKey.get(service);
      if (this.#reported.has(key) || object === undefined) continue;
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
    this.#reported = now;
    return emitted;
  }
}
