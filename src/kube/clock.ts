/**
 * Time as the work queue, rate limiters and event recorder see it, so tests can drive it by hand
 * (`tests/unit/_fakes/fake_clock.ts`) instead of sleeping.
 *
 * @module
 */

/** A cancellable pending timer. */
export interface Timer {
  /** Stops the timer; calling it after it fired does nothing. */
  cancel(): void;
}

/** Wall-clock time and one-shot timers. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /**
   * Calls `callback` once after `ms` milliseconds.
   * @param callback what to run
   * @param ms delay in milliseconds
   * @returns a handle to cancel it
   */
  setTimer(callback: () => void, ms: number): Timer;
}

/**
 * The real clock: `Date.now()` and `setTimeout`.
 * @returns a Clock backed by the runtime
 */
export function systemClock(): Clock {
  return {
    now: () => Date.now(),
    setTimer(callback: () => void, ms: number): Timer {
      const id = setTimeout(callback, Math.max(0, ms));
      return { cancel: () => clearTimeout(id) };
    },
  };
}
