/**
 * Tells when the configuration file asks for start-only settings (`restart_settings.ts`) other
 * than the ones the process runs with: one warning per reload naming each setting with its
 * running and its new value, the gauge `keelson_config_restart_required` (1 while they differ,
 * back to 0 once the file is edited back or the process restarted), and the names for this
 * host's heartbeat report, which `keelson status` prints.
 *
 * @module
 */
import { Gauge, type Registry } from "prom-client";
import { logger } from "../log/logging.ts";
import { declareOnce } from "../metrics/registry.ts";
import { type PendingRestart, pendingRestart, pinStartOnly } from "./restart_settings.ts";
import type { Config } from "./types.ts";

/** The gauge's name. */
export const RESTART_REQUIRED_METRIC = "keelson_config_restart_required";

/** Options of `RestartRequired`. */
export interface RestartRequiredOptions {
  /** The config the process started with (command-line flags applied). */
  running: Config;
  /** This host's machine name (whether it runs keepalived or BIRD decides what applies). */
  host: string;
  /** Where the gauge is registered. */
  registry: Registry;
}

/** Compares each reloaded config with the start values; see the module comment. */
export class RestartRequired {
  #running: Config;
  #host: string;
  #gauge: Gauge;
  #pending: PendingRestart[] = [];
  #log = logger("config");

  /** @param options the start config, the host and the registry */
  constructor(options: RestartRequiredOptions) {
    this.#running = options.running;
    this.#host = options.host;
    this.#gauge = declareOnce(options.registry, RESTART_REQUIRED_METRIC, () =>
      new Gauge({
        name: RESTART_REQUIRED_METRIC,
        help: "1 while the configuration file sets start-only settings to other values than " +
          "the running ones (restart keelson to apply them), else 0.",
        registers: [options.registry],
      }));
    this.#gauge.set(0);
  }

  /**
   * Takes a reloaded config: logs and counts the start-only settings it changes.
   * @param next the reloaded config (flags applied), already validated
   * @returns `next` with the start values of the start-only settings, for the running parts
   */
  update(next: Config): Config {
    const before = this.#pending;
    this.#pending = pendingRestart(this.#running, next, this.#host);
    this.#gauge.set(this.#pending.length > 0 ? 1 : 0);
    if (this.#pending.length > 0) {
      this.#log.warn(
        "The file changes settings read only at start; they keep their running values: " +
          "{changes}; restart keelson to apply (systemctl restart keelson)",
        {
          changes: this.#pending.map((p) => `${p.name} ${p.was} -> ${p.now}`).join("; "),
          settings: this.#pending.map((p) => p.name),
        },
      );
    } else if (before.length > 0) {
      this.#log.info("The start-only settings in the file match the running ones again");
    }
    return pinStartOnly(next, this.#running);
  }

  /** @returns the names of the start-only settings pending a restart (empty: none) */
  pending(): string[] {
    return this.#pending.map((p) => p.name);
  }
}
