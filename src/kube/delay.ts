/**
 * The one abortable delay. It resolves when the time is up or as soon as the signal aborts, and
 * never rejects: a stop while waiting is the normal way out of a loop, which checks
 * `signal.aborted` next (`while (!signal.aborted) { …; await delay(ms, signal); }`).
 *
 * @module
 */
import { type Clock, systemClock } from "./clock.ts";

/**
 * Waits `ms` milliseconds, or less when `signal` aborts.
 * @param ms how long
 * @param signal cuts the wait short
 * @param clock the time source (a fake one in tests) @default systemClock()
 * @returns when the time is up or the signal aborted
 */
export function delay(
  ms: number,
  signal?: AbortSignal,
  clock: Clock = systemClock(),
): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      timer.cancel();
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = clock.setTimer(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
