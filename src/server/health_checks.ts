/**
 * Named health checks behind /healthz, /livez and /readyz (the upstream healthz model: every
 * check is a name and a pass/fail; reasons are logged, never served).
 *
 * @module
 */
import { errorMessage } from "../log/error_message.ts";

/** What one check reports. */
export interface CheckStatus {
  /** True when healthy. */
  ok: boolean;
  /** Why not, for the log (the HTTP answer says only "reason withheld"). */
  reason?: string;
}

/** One check's outcome in an evaluation. */
export interface CheckResult {
  /** The check name, e.g. `leaderElection`. */
  name: string;
  /** True when healthy (always true when excluded). */
  ok: boolean;
  /** Why not, when it failed. */
  reason?: string;
  /** True when skipped by `?exclude=`. */
  excluded: boolean;
}

/** The outcome of running every check. */
export interface HealthReport {
  /** True when every check that was not excluded passed. */
  ok: boolean;
  /** One result per check, in registration order. */
  results: CheckResult[];
  /** Names given to exclude that match no check. */
  unmatchedExcludes: string[];
}

/** The checks of this process; `ping` stands in while no other check is registered. */
export class HealthChecks {
  #checks = new Map<string, () => CheckStatus>();

  /**
   * Registers (or replaces) a check.
   * @param name the check name shown in `[+]name ok`
   * @param check returns the current status; a throw counts as a failure
   */
  add(name: string, check: () => CheckStatus): void {
    this.#checks.set(name, check);
  }

  /**
   * Removes a check; unknown names are ignored.
   * @param name the check name
   */
  remove(name: string): void {
    this.#checks.delete(name);
  }

  /**
   * Runs every check.
   * @param exclude names to skip (reported as excluded and ok)
   * @returns the overall verdict and each check's result
   */
  evaluate(exclude: string[] = []): HealthReport {
    const checks: [string, () => CheckStatus][] = this.#checks.size > 0
      ? [...this.#checks]
      : [["ping", () => ({ ok: true })]];
    const unmatched = new Set(exclude);
    const results: CheckResult[] = checks.map(([name, check]) => {
      if (exclude.includes(name)) {
        unmatched.delete(name);
        return { name, ok: true, excluded: true };
      }
      return { name, ...run(check), excluded: false };
    });
    return {
      ok: results.every((r) => r.ok),
      results,
      unmatchedExcludes: [...unmatched],
    };
  }
}

function run(check: () => CheckStatus): { ok: boolean; reason?: string } {
  try {
    const status = check();
    return status.ok ? { ok: true } : { ok: false, reason: status.reason ?? "check failed" };
  } catch (error) {
    return { ok: false, reason: errorMessage(error) };
  }
}
