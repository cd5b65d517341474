/**
 * The integration tests' ways to wait, over the one poll helper (tests/_support/poll.ts): until the
 * cluster reaches a state, with a deadline and a message that says what never happened.
 *
 * @module
 */
import { pollUntil } from "../../_support/poll.ts";

/** Options for `waitFor`. */
export interface WaitOptions {
  /** Give up after this long. @default 30_000 */
  timeoutMs?: number;
  /** Pause between attempts. @default 100 */
  intervalMs?: number;
  /** What is awaited, for the timeout message. @default "condition" */
  message?: string;
}

/**
 * Calls `predicate` until it returns a truthy value (errors count as "not yet").
 * @param predicate returns the awaited value, or a falsy value while not there yet
 * @param options timeout, interval and message
 * @returns the first truthy value
 * @throws {Error} on timeout, naming `message` and the last error the predicate threw
 */
export async function waitFor<T>(
  predicate: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  options: WaitOptions = {},
): Promise<T> {
  // truthy, as callers expect: a count of 0 or an empty string is "not yet"
  const truthy = async () => (await predicate()) || undefined;
  const waited = await pollUntil(options.message ?? "condition", truthy, {
    timeoutMs: options.timeoutMs ?? 30_000,
    intervalMs: options.intervalMs ?? 100,
    retryErrors: true,
  });
  return waited.value;
}

/**
 * Polls `probe` until it returns a value, and says how long that took (figures for e2e reports).
 * @param what what is awaited, for the timeout message
 * @param probe returns the value, or undefined while not there yet
 * @param timeoutMs give up after this long
 * @param intervalMs pause between attempts. @default 10
 * @returns the value and the milliseconds until it came
 * @throws {Error} on timeout, naming `what`
 */
export async function timedWait<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs: number,
  intervalMs = 10,
): Promise<{ value: T; ms: number }> {
  return await pollUntil(what, probe, { timeoutMs, intervalMs });
}
