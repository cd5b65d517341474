/**
 * Keelson's fail-closed guards around Node deletion: the "last reload removed too many machines"
 * check, and the sliding-window rate limit `keelson plan` simulates over a snapshot (`run` counts
 * the deletions recorded on the leader Lease instead, `../action_ledger/`).
 *
 * @module
 */
import type { Config } from "../../config/types.ts";

/** Answers whether deletions are allowed right now (wired by `run` from config reloads). */
export interface DeletionGuard {
  /** `ok: false` with a reason blocks every deletion. */
  deletionsAllowed(): { ok: boolean; reason?: string };
}

/**
 * Blocks deletions after a reload that removed more than `max_removed_fraction` of the machines,
 * until the next reload that does not. Feed it every accepted configuration.
 */
export class ReloadDeletionGuard implements DeletionGuard {
  #previous: Config | undefined;
  #blocked: string | undefined;
  #lastReloadSucceeded: () => boolean;

  /**
   * @param options `lastReloadSucceeded`: false while the file on disk is rejected; deletions
   *   wait until it is fixed (everything else goes on with the last good config)
   */
  constructor(options: { lastReloadSucceeded?: () => boolean } = {}) {
    this.#lastReloadSucceeded = options.lastReloadSucceeded ?? (() => true);
  }

  /**
   * Records an accepted configuration (the first one only sets the baseline). A reload with the
   * same machine names keeps the current verdict, so re-saving a truncated file does not unblock.
   * @param config the configuration now in force
   */
  onConfig(config: Config): void {
    if (this.#previous && sameMachines(this.#previous, config)) return;
    this.#blocked = removedFractionBlock(this.#previous, config);
    this.#previous = config;
  }

  /** @returns ok unless the last reload was rejected or removed too many machines */
  deletionsAllowed(): { ok: boolean; reason?: string } {
    if (!this.#lastReloadSucceeded()) {
      return {
        ok: false,
        reason: "the inventory file failed validation on its last reload; deletions wait " +
          "until it is fixed (the last good inventory stays in force for everything else)",
      };
    }
    return this.#blocked === undefined ? { ok: true } : { ok: false, reason: this.#blocked };
  }
}

/**
 * Why a reload from `previous` to `current` must block deletions, or undefined.
 * @param previous the configuration before the reload (undefined at startup)
 * @param current the new configuration (its `node_lifecycle.max_removed_fraction` applies)
 * @returns a sentence naming the counts, or undefined when the reload is acceptable
 */
export function removedFractionBlock(
  previous: Config | undefined,
  current: Config,
): string | undefined {
  if (!previous || previous.machines.length === 0) return undefined;
  const now = new Set(current.machines.map((m) => m.name));
  const removed = previous.machines.filter((m) => !now.has(m.name)).length;
  const fraction = removed / previous.machines.length;
  const max = current.node_lifecycle.max_removed_fraction;
  if (fraction <= max) return undefined;
  return `the last inventory reload removed ${removed} of ${previous.machines.length} machines (${
    Math.round(fraction * 100)
  }%, more than max_removed_fraction ${max})`;
}

/** At most `max` deletions in any window of `intervalMs`, in memory (`keelson plan`'s model). */
export class DeletionRateLimiter {
  #times: number[] = [];

  /**
   * Takes one deletion slot if one is free.
   * @param now milliseconds since the epoch
   * @param max deletions allowed per window
   * @param intervalMs the window
   * @returns whether the deletion may go ahead
   */
  tryTake(now: number, max: number, intervalMs: number): boolean {
    this.#times = this.#times.filter((t) => now - t < intervalMs);
    if (this.#times.length >= max) return false;
    this.#times.push(now);
    return true;
  }
}

function sameMachines(a: Config, b: Config): boolean {
  const names = (c: Config): string => c.machines.map((m) => m.name).sort().join("\n");
  return names(a) === names(b);
}
