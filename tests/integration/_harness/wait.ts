/**
 * Polling for integration tests: wait until the cluster reaches a state, with a deadline and a
 * message that says what never happened.
 *
 * @module
 */

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
  const timeoutMs = options.timeoutMs ?? 30_000;
  const intervalMs = options.intervalMs ?? 100;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (true) {
    try {
      const value = await predicate();
      if (value) return value;
      lastError = undefined;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) break;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  throw new Error(
    `Timed out after ${timeoutMs} ms waiting for ${options.message ?? "condition"}` +
      (lastError === undefined ? "" : `: last error: ${String(lastError)}`),
  );
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
  const start = performance.now();
  for (;;) {
    const value = await probe();
    if (value !== undefined) return { value, ms: performance.now() - start };
    if (performance.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
