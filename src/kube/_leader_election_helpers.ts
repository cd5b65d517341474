/**
 * Helpers of `leader_election.ts`: option checks, identity, an abortable sleep on a Clock, and
 * the comparison key of a Lease's leader-election record.
 *
 * @module
 */
import type { V1Lease } from "@kubernetes/client-node";
import type { Clock } from "./clock.ts";

/** The option fields `validateElectorOptions` checks. */
export interface ElectorDurations {
  namespace: string;
  name: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

/**
 * client-go's identity convention: `<hostname>_<random UUID>`.
 * @returns a fresh identity
 */
export function defaultIdentity(): string {
  let host = "keelson";
  try {
    host = Deno.hostname();
  } catch {
    // no --allow-sys=hostname: the UUID alone keeps identities unique
  }
  return `${host}_${crypto.randomUUID()}`;
}

/**
 * Waits `ms` on `clock`; resolves early (never rejects) when `signal` aborts.
 * @param clock the time source
 * @param ms how long
 * @param signal cuts the wait short
 */
export function sleep(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      timer.cancel();
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = clock.setTimer(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

/**
 * A Lease time (a Date when we wrote it, a string when read back) in ms since the epoch.
 * @param value the field
 * @returns ms, or undefined when absent or unparsable
 */
export function timeMs(value: unknown): number | undefined {
  if (value instanceof Date) return value.getTime();
  if (typeof value === "string") {
    const ms = Date.parse(value);
    return Number.isNaN(ms) ? undefined : ms;
  }
  return undefined;
}

// The fields that make up client-go's LeaderElectionRecord; a change in any of them restarts the
// expiry countdown. Times are normalised because reads return strings and writes send Dates.
/**
 * @param lease the Lease
 * @returns a string that changes whenever the leader-election record changes
 */
export function recordKey(lease: V1Lease | undefined): string {
  const spec = lease?.spec ?? {};
  return JSON.stringify([
    spec.holderIdentity ?? "",
    spec.leaseDurationSeconds ?? 0,
    timeMs(spec.acquireTime) ?? null,
    timeMs(spec.renewTime) ?? null,
    spec.leaseTransitions ?? 0,
  ]);
}

/**
 * Checks the options as client-go's NewLeaderElector does.
 * @param options the elector options
 * @param jitterFactor the acquire jitter factor
 * @throws {RangeError} naming the lease, the rule and the values
 */
export function validateElectorOptions(options: ElectorDurations, jitterFactor: number): void {
  const fail = (detail: string) => {
    throw new RangeError(
      `Cannot create leader elector for lease "${options.namespace}/${options.name}": ${detail}`,
    );
  };
  if (!options.namespace || !options.name) fail("namespace and name must not be empty");
  if (!(options.retryPeriodMs > 0)) fail(`retryPeriodMs must be > 0, got ${options.retryPeriodMs}`);
  if (!(options.leaseDurationMs >= 1000)) {
    fail(`leaseDurationMs must be at least 1000, got ${options.leaseDurationMs}`);
  }
  if (!(options.leaseDurationMs > options.renewDeadlineMs)) {
    fail(
      `leaseDurationMs must be greater than renewDeadlineMs, got ${options.leaseDurationMs} <= ${options.renewDeadlineMs}`,
    );
  }
  if (!(options.renewDeadlineMs > jitterFactor * options.retryPeriodMs)) {
    fail(
      `renewDeadlineMs must be greater than retryPeriodMs * ${jitterFactor}, got ${options.renewDeadlineMs} <= ${
        jitterFactor * options.retryPeriodMs
      }`,
    );
  }
}
