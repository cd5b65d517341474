/**
 * The Service addresses a keepalived render left out, said once each while they stay left out,
 * and counted in `keelson_keepalived_skipped_addresses`.
 *
 * @module
 */
import { Gauge, type Registry } from "prom-client";
import { declareOnce } from "../../../src/metrics/registry.ts";
import { logger } from "../../../src/log/logging.ts";
import type { SkippedAddress } from "./served_addresses.ts";

const SKIPPED_METRIC = "keelson_keepalived_skipped_addresses";

/** Logs each newly skipped address once (every host) and keeps the gauge at the current count. */
export class SkippedAddressReport {
  #configFile: string;
  #gauge: Gauge | undefined;
  #log = logger("keepalived", "announcer");
  /** `service value reason` of the addresses the last render skipped. */
  #said = new Set<string>();

  /**
   * @param configFile keepalived's file, named for addresses kept from it
   * @param registry where the gauge is registered; absent: not exported
   */
  constructor(configFile: string, registry: Registry | undefined) {
    this.#configFile = configFile;
    if (registry) {
      this.#gauge = declareOnce(registry, SKIPPED_METRIC, () =>
        new Gauge({
          name: SKIPPED_METRIC,
          help: "Service addresses this host does not serve through keepalived because no pool " +
            "offers them, or they belong to a machine or the control-plane VIP.",
          registers: [registry],
        }));
    }
  }

  /**
   * Reports the addresses the latest render skipped.
   * @param skipped every address it left out
   */
  report(skipped: readonly SkippedAddress[]): void {
    const now = new Set<string>();
    for (const item of skipped) {
      const key = `${item.service ?? ""} ${item.value} ${item.reason}`;
      now.add(key);
      if (this.#said.has(key)) continue;
      if (item.service !== undefined) {
        this.#log.warn("Not serving {value} of service {service}: {reason}", {
          value: item.value,
          service: item.service,
          reason: item.reason,
        });
      } else {
        // kept from the file before the Service cache synced: no Service is known for it yet
        this.#log.warn(
          "Not serving {value}, kept from {file} until the Service cache syncs: {reason}",
          { value: item.value, file: this.#configFile, reason: item.reason },
        );
      }
    }
    this.#said = now;
    this.#gauge?.set(now.size);
  }
}
