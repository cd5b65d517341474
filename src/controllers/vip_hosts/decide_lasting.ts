/**
 * Findings that deserve a Warning only when they last: a host serving an address no Service
 * holds (a Service just deleted is withdrawn within a moment), a host on another inventory (a
 * file copied to the hosts one after the other differs for a moment). Each finding has a key;
 * it is reported once when it has been seen continuously for its grace, and again only after it
 * went away and came back. Pure; time comes in as an argument.
 *
 * @module
 */
import { compareCodeUnits } from "../../text/code_unit_order.ts";

/** Remembers since when each finding has been seen. */
export class LastingFindings {
  #since = new Map<string, { since: number; reported: boolean }>();
  readonly #graceMs: number;

  /** @param graceMs how long a finding must last before it is reported */
  constructor(graceMs: number) {
    this.#graceMs = graceMs;
  }

  /**
   * Notes the findings seen now.
   * @param keys every finding seen now (those not given are forgotten)
   * @param nowMs the reader's monotonic clock
   * @returns the keys to report now (each once per appearance), sorted
   */
  step(keys: Iterable<string>, nowMs: number): string[] {
    const seen = new Set(keys);
    for (const key of [...this.#since.keys()]) if (!seen.has(key)) this.#since.delete(key);
    const due: string[] = [];
    for (const key of seen) {
      let state = this.#since.get(key);
      if (!state) {
        state = { since: nowMs, reported: false };
        this.#since.set(key, state);
      }
      if (!state.reported && nowMs - state.since >= this.#graceMs) {
        state.reported = true;
        due.push(key);
      }
    }
    return due.sort(compareCodeUnits);
  }

  /** @returns when the next finding is due (the reader's clock), or undefined */
  nextDeadline(): number | undefined {
    let next: number | undefined;
    for (const state of this.#since.values()) {
      if (state.reported) continue;
      const at = state.since + this.#graceMs;
      if (next === undefined || at < next) next = at;
    }
    return next;
  }
}
