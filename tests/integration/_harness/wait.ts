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
