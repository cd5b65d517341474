/**
 * A hand-driven Clock: time moves only when a test calls `advance`, which fires due timers in
 * time order (ties in creation order).
 *
 * @module
 */
import type { Clock, Timer } from "../../../src/kube/clock.ts";

interface Pending {
  at: number;
  seq: number;
  callback: () => void;
}

/** A Clock for tests. */
export class FakeClock implements Clock {
  #now: number;
  #seq = 0;
  #pending = new Set<Pending>();

  /** @param start the initial time in ms since the epoch */
  constructor(start = 1_700_000_000_000) {
    this.#now = start;
  }

  /** @returns the current fake time */
  now(): number {
    return this.#now;
  }

  /**
   * Schedules `callback` at now + `ms`.
   * @param callback what to run
   * @param ms delay
   * @returns a cancellable handle
   */
  setTimer(callback: () => void, ms: number): Timer {
    const entry = { at: this.#now + Math.max(0, ms), seq: this.#seq++, callback };
    this.#pending.add(entry);
    return { cancel: () => void this.#pending.delete(entry) };
  }

  /**
   * Moves time forward by `ms`, running every timer that falls due on the way.
   * @param ms how far to move
   */
  advance(ms: number): void {
    const end = this.#now + ms;
    for (;;) {
      const next = [...this.#pending]
        .filter((p) => p.at <= end)
        .sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!next) break;
      this.#pending.delete(next);
      this.#now = next.at;
      next.callback();
    }
    this.#now = end;
  }

  /** @returns how many timers are pending */
  pendingTimers(): number {
    return this.#pending.size;
  }
}
