/**
 * What SIGTERM/SIGINT mean to `keelson run`: the first one starts the orderly stop, a second one
 * while stopping (Ctrl-C pressed again) cuts it short: every part is told at once and the rest is
 * bounded (src/agent/shutdown.ts). Later ones change nothing: the stop is bounded already.
 *
 * @module
 */

/** The two stop signals of the agent, driven by the process's signals. */
export class StopSignals {
  readonly #stop = new AbortController();
  readonly #hurry = new AbortController();

  /** Aborts on the first signal: the orderly stop. */
  get stop(): AbortSignal {
    return this.#stop.signal;
  }

  /** Aborts on the second signal: everything at once, within a short bound. */
  get hurry(): AbortSignal {
    return this.#hurry.signal;
  }

  /**
   * Takes one SIGTERM/SIGINT.
   * @returns `stop` for the first, `hurry` for the second, `ignored` afterwards
   */
  receive(): "stop" | "hurry" | "ignored" {
    if (!this.#stop.signal.aborted) {
      this.#stop.abort();
      return "stop";
    }
    if (!this.#hurry.signal.aborted) {
      this.#hurry.abort();
      return "hurry";
    }
    return "ignored";
  }
}
