/**
 * A delay that something else can end early: a loop waits for its period, and an event (a
 * change to publish, a cache update) wakes it at once. The timer is cancelled either way.
 *
 * @module
 */
import { delay } from "./delay.ts";

/** A reusable wake-up point for one loop. */
export class Wakeable {
  #wake: AbortController | undefined;
  #pending = false;

  /** Ends the current wait, or the next one at once when none is running. */
  wake(): void {
    this.#pending = true;
    this.#wake?.abort();
  }

  /**
   * Waits `ms`, until `wake()` or until `signal` aborts; never rejects.
   * @param ms how long
   * @param signal the loop's stop signal
   * @returns true when woken (also by a wake that came before the wait), false otherwise
   */
  async wait(ms: number, signal: AbortSignal): Promise<boolean> {
    if (this.#pending) {
      this.#pending = false;
      return true;
    }
    const controller = new AbortController();
    this.#wake = controller;
    await delay(ms, AbortSignal.any([signal, controller.signal]));
    this.#wake = undefined;
    const woken = this.#pending;
    this.#pending = false;
    return woken;
  }
}
