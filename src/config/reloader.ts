/**
 * Re-reads the configuration file on SIGHUP or when it changes on disk. A file that does not
 * validate (or that the caller's `validate` refuses) is logged issue by issue and rejected; the
 * last good config stays in force for everything that is not destructive, and
 * `lastReloadSucceeded()` tells destructive callers (Node deletion) to wait until the file is
 * fixed. An empty or truncated file is refused like any other invalid one ("the inventory lists
 * no machines"). Exposes Prometheus' own reload metric names. A valid file that changes settings
 * read only at start is applied like any other; the caller keeps their start values and says a
 * restart is pending (`restart_required.ts`).
 *
 * @module
 */
import { Gauge, type Registry } from "prom-client";
import { logger } from "../log/logging.ts";
import { ConfigError, type ConfigIssue, formatIssue } from "./config_error.ts";
import { loadInventory } from "./load_config.ts";
import type { Config } from "./types.ts";
import { declareOnce } from "../metrics/registry.ts";
import { delay } from "../kube/delay.ts";

/** Options of `ConfigReloader`. */
export interface ConfigReloaderOptions {
  /** Where the reload gauges are registered. */
  registry: Registry;
  /** Quiet time after a change is seen before reloading, in ms. @default 500 */
  debounceMs?: number;
  /** How often the file is looked at (stat) for a change, in ms. @default 1000 */
  pollMs?: number;
  /** Called with the new and previous config after a valid file with different content. */
  onChange: (config: Config, previous: Config) => void | Promise<void>;
  /**
   * Checks a file that validated against what only the caller knows (the command-line flags it
   * applies, the addresses Services hold); any issue rejects the reload like an invalid file.
   * @default no further checks
   */
  validate?: (next: Config, current: Config) => ConfigIssue[];
  /** Clock for the success timestamp, in ms since the epoch. @default Date.now */
  now?: () => number;
  /**
   * The command-line overrides the caller applies: a file a flag replaces is not read as the
   * inventory's (every other file the inventory names is, as `check` reads it).
   */
  apply?: (config: Config) => Config;
  /**
   * The digest of the file the initial config was read from (`loadInventory`): the inventory in
   * force from the start. @default unknown until the first accepted reload
   */
  initialSha256?: string;
}

/** The inventory in force: the digest of its file, and when it took effect. */
export interface InventoryInForce {
  /** SHA-256 of the file's bytes (`loadInventory`), lowercase hex. */
  sha256: string;
  /** When a file with this digest was first accepted (at start, or by a reload). */
  since: Date;
}

const SUCCESS_NAME = "keelson_config_last_reload_successful";
const TIMESTAMP_NAME = "keelson_config_last_reload_success_timestamp_seconds";

/**
 * Keeps the current config and replaces it when a reload succeeds.
 * @example
 * ```ts
 * import { Registry } from "prom-client";
 * import { loadInventory } from "./load_config.ts";
 *
 * async function watchConfig(path: string, signal: AbortSignal): Promise<void> {
 *   const reloader = new ConfigReloader(path, await loadConfigFile(path), {
 *     registry: new Registry(),
 *     onChange: (next, previous) => {
 *       if (next.pools !== previous.pools) {
 *         // hand the new pools to IPAM
 *       }
 *     },
 *   });
 *   await reloader.run(signal); // until aborted
 * }
 * ```
 */
export class ConfigReloader {
  #path: string;
  #config: Config;
  #fingerprint: string;
  #options: ConfigReloaderOptions;
  #successful: Gauge;
  #lastSucceeded = true;
  /** When the file last loaded and validated (ms since the epoch, `now`'s clock). */
  #lastSuccessMs = 0;
  #timestamp: Gauge;
  #inventory: InventoryInForce | undefined;
  #log = logger("config");
  /** Reloads run one at a time, in order. */
  #queue: Promise<unknown> = Promise.resolve();

  /**
   * @param path the configuration file
   * @param initial the config loaded at startup (counts as a successful load)
   * @param options registry, debounce and the change callback
   */
  constructor(path: string, initial: Config, options: ConfigReloaderOptions) {
    this.#path = path;
    this.#config = initial;
    this.#fingerprint = fingerprint(initial);
    this.#options = options;
    this.#successful = gauge(
      options.registry,
      SUCCESS_NAME,
      "Whether the last configuration reload attempt was successful (1) or not (0).",
    );
    this.#timestamp = gauge(
      options.registry,
      TIMESTAMP_NAME,
      "Timestamp of the last successful configuration load, in seconds since the epoch.",
    );
    this.#markSuccess();
    if (options.initialSha256 !== undefined) {
      this.#inventory = { sha256: options.initialSha256, since: new Date(this.#lastSuccessMs) };
    }
  }

  /** @returns the config in force: the last one that validated */
  current(): Config {
    return this.#config;
  }

  /**
   * Reads and validates the file now; on success replaces the config and, when its content
   * changed, calls `onChange`. Never throws.
   * @param reason why, for the log (e.g. "SIGHUP", "file changed")
   * @returns true when the file validated, false when it was rejected
   */
  reload(reason: string): Promise<boolean> {
    const attempt = this.#queue.then(() => this.#reload(reason));
    this.#queue = attempt;
    return attempt;
  }

  /**
   * Reloads on SIGHUP and on changes to the file until `signal` aborts. A change is seen by
   * stat(2) every `pollMs` (a new inode when editors and config management replace the file by
   * rename, a new size or time when it is written in place). Not `Deno.watchFs`: its inotify
   * thread opens each file created in the watched directory, so a FIFO put next to the inventory
   * (a token or password file) blocked that thread for good, later changes went unseen and closing
   * the watcher never returned, so SIGTERM never ended the process. Never throws.
   * @param signal stops watching
   */
  async run(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    const onHangup = (): void => void this.reload("SIGHUP");
    let listening = false;
    try {
      Deno.addSignalListener("SIGHUP", onHangup);
      listening = true;
    } catch (error) {
      this.#log.warn("Cannot listen for SIGHUP: {error}", { error: String(error) });
    }
    try {
      await this.#watch(signal);
      if (!signal.aborted) {
        await new Promise<void>((resolve) =>
          signal.addEventListener("abort", () => resolve(), { once: true })
        );
      }
    } finally {
      if (listening) Deno.removeSignalListener("SIGHUP", onHangup);
      await this.#queue;
    }
  }

  async #watch(signal: AbortSignal): Promise<void> {
    // stat(2) only: nothing here opens a file, and the loop ends on the signal
    const pollMs = this.#options.pollMs ?? 1000;
    let seen = await fileIdentity(this.#path);
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      while (!signal.aborted) {
        await delay(pollMs, signal);
        if (signal.aborted) break;
        const now = await fileIdentity(this.#path);
        if (now === seen) continue;
        seen = now;
        clearTimeout(timer);
        timer = setTimeout(() => void this.reload("file changed"), this.#options.debounceMs ?? 500);
      }
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Whether the last load of the file validated. After a rejected reload the last good config
   * stays in force, but callers that act destructively on the inventory (Node deletion) must
   * hold back until the file is fixed.
   * @returns false after a rejected reload, true after a successful one
   */
  lastReloadSucceeded(): boolean {
    return this.#lastSucceeded;
  }

  /**
   * When the file last loaded and validated: at start, or at the last accepted reload (an
   * unchanged file counts). The same time as `keelson_config_last_reload_success_timestamp_seconds`.
   * @returns the time
   */
  lastSuccessAt(): Date {
    return new Date(this.#lastSuccessMs);
  }

  /**
   * The inventory in force: the digest of the file last accepted and when a file with that
   * digest was first accepted (an unchanged file keeps the time; a rejected one changes nothing).
   * @returns it, or undefined while unknown (no digest at start, no reload accepted since)
   */
  inventoryInForce(): InventoryInForce | undefined {
    return this.#inventory;
  }

  async #reload(reason: string): Promise<boolean> {
    let next: Config;
    let sha256: string;
    try {
      // every file the inventory names is read too, each bounded in size and time: a reload
      // that cannot read one is rejected with the reason and never holds up the next
      ({ config: next, sha256 } = await loadInventory(this.#path, {
        namedFiles: true,
        ...(this.#options.apply ? { apply: this.#options.apply } : {}),
      }));
      const issues = this.#options.validate?.(next, this.#config) ?? [];
      if (issues.length > 0) throw new ConfigError(issues);
    } catch (error) {
      this.#successful.set(0);
      this.#lastSucceeded = false;
      const lines = error instanceof ConfigError
        ? error.issues.map(formatIssue)
        : [`${this.#path}: ${String(error)}`];
      this.#log.error("Rejected configuration reload ({reason}); keeping the last good one", {
        reason,
        issues: lines.length,
      });
      for (const line of lines) this.#log.error("{issue}", { issue: line });
      return false;
    }
    const recovered = !this.#lastSucceeded;
    this.#markSuccess();
    if (recovered) {
      // the journal's last word must not stay the ERROR of the rejected reload
      this.#log.info(
        "Configuration file valid again ({reason}); the rejected reload before it no longer holds",
        { reason },
      );
    }
    if (this.#inventory?.sha256 !== sha256) {
      this.#inventory = { sha256, since: new Date(this.#lastSuccessMs) };
    }
    const nextFingerprint = fingerprint(next);
    if (nextFingerprint === this.#fingerprint) {
      this.#log.debug("Configuration reloaded ({reason}); unchanged", { reason });
      return true;
    }
    const previous = this.#config;
    this.#config = next;
    this.#fingerprint = nextFingerprint;
    this.#log.info("Configuration reloaded ({reason}); applying changes", { reason });
    try {
      await this.#options.onChange(next, previous);
    } catch (error) {
      this.#log.error("Applying the reloaded configuration failed: {error}", {
        error: String(error),
      });
    }
    return true;
  }

  #markSuccess(): void {
    this.#lastSucceeded = true;
    this.#successful.set(1);
    this.#lastSuccessMs = (this.#options.now ?? Date.now)();
    this.#timestamp.set(this.#lastSuccessMs / 1000);
  }
}

/** The same gauge when two reloaders share a registry (prom-client rejects duplicates). */
function gauge(registry: Registry, name: string, help: string): Gauge {
  return declareOnce(registry, name, () => new Gauge({ name, help, registers: [registry] }));
}

/** Key-order-independent JSON, so reordered but equal files count as unchanged. */
function fingerprint(value: unknown): string {
  return JSON.stringify(
    value,
    (_key, v: unknown) =>
      v !== null && typeof v === "object" && !Array.isArray(v)
        ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)),
        )
        : v,
  );
}

/** What tells one version of the file from the next, without opening it. */
async function fileIdentity(path: string): Promise<string> {
  try {
    const info = await Deno.stat(path);
    return [info.dev, info.ino, info.size, info.mtime?.getTime(), info.ctime?.getTime()].join(":");
  } catch (error) {
    // a missing file is a state too: its return is a change
    return error instanceof Error ? error.name : "unreadable";
  }
}
