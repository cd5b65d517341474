/**
 * A sliding-window cap on power actions (out-of-service taints added, machines forced off):
 * at most `max` in any window of `intervalMs`. The decision asks whether a slot is free; the
 * controller takes it only when it acts, so a dry run or a held action uses none.
 *
 * @module
 */

/** At most `max` actions in any window of `intervalMs`. */
export class ActionRateLimit {
  #times: number[] = [];

  /**
   * Whether an action may go ahead now.
   * @param now milliseconds since the epoch
   * @param max actions allowed per window (0: never)
   * @param intervalMs the window
   * @returns true when a slot is free
   */
  free(now: number, max: number, intervalMs: number): boolean {
    this.#times = this.#times.filter((t) => now - t < intervalMs);
    return this.#times.length < max;
  }

  /**
   * Records an action taken at `now`.
   * @param now milliseconds since the epoch
   */
  take(now: number): void {
    this.#times.push(now);
  }
}
