/**
 * The agent's bounded stop. On SIGTERM/SIGINT the parts stop one step after another, each step
 * told by its own signal and awaited before the next one starts:
 *
 * 1. `controllers`: the controllers stop, pending Event writes get a short grace period, and a
 *    leader releases its Lease (leader election does these in this order, so no other instance
 *    writes while ours still do);
 * 2. `informers`: the watches end (every read on the network ends on the signal);
 * 3. `background`: the configuration reloader and keepalived reloads;
 * 4. `server`: the health and metrics server.
 *
 * One deadline covers the whole sequence, below systemd's `TimeoutStopSec`: when it passes, the
 * parts still running are logged by name and the agent exits non-zero instead of waiting for
 * SIGKILL.
 *
 * A second signal while stopping (an operator pressing Ctrl-C again) does not wait for the order:
 * every remaining step is told at once (keepalived and BIRD still get their stop, BGP paths are
 * still withdrawn) and the deadline shrinks to `HURRY_GRACE_MS`.
 *
 * @module
 */
import { logger } from "../log/logging.ts";

/** The whole stop sequence ends within this (deploy/systemd/keelson.service: TimeoutStopSec=20s). */
export const STOP_DEADLINE_MS = 15_000;

/** After a second signal, what is left of the stop gets at most this long. */
export const HURRY_GRACE_MS = 2_000;

/** The steps, in order. */
export const STOP_STEPS = ["controllers", "informers", "background", "server"] as const;

/** One step of the stop sequence. */
export type StopStep = typeof STOP_STEPS[number];

/** What `StopSequence.stop` found. */
export interface StopOutcome {
  /** True when every part stopped before the deadline. */
  ok: boolean;
  /** How long the stop took, in ms. */
  ms: number;
  /** Names of the parts still running at the deadline. */
  pending: string[];
}

interface Part {
  name: string;
  done: boolean;
  promise: Promise<unknown>;
}

/** Per-step stop signals and the parts each step waits for. */
export class StopSequence {
  readonly #controllers = new Map<StopStep, AbortController>();
  readonly #parts = new Map<StopStep, Part[]>();
  readonly #log = logger("agent", "shutdown");

  constructor() {
    for (const step of STOP_STEPS) {
      this.#controllers.set(step, new AbortController());
      this.#parts.set(step, []);
    }
  }

  /**
   * The signal that tells one step's parts to stop.
   * @param step the step
   * @returns its signal
   */
  signal(step: StopStep): AbortSignal {
    return this.#controllers.get(step)!.signal;
  }

  /**
   * Registers a part the step waits for.
   * @param step the step
   * @param name the part's name in the log (e.g. `informers`, `keepalived`)
   * @param promise settles when the part has stopped (a rejection counts as stopped)
   */
  track(step: StopStep, name: string, promise: Promise<unknown> | undefined): void {
    if (!promise) return;
    const part: Part = { name, done: false, promise };
    part.promise = promise.then(
      () => {
        part.done = true;
      },
      (error) => {
        part.done = true;
        this.#log.warn("{part} stopped with an error: {error}", {
          part: name,
          error: String(error),
        });
      },
    );
    this.#parts.get(step)!.push(part);
  }

  /**
   * Stops the steps in order, within one deadline.
   * @param deadlineMs the bound of the whole sequence
   * @param hurry when it aborts (a second signal), every remaining step is told at once and the
   *   deadline becomes at most `hurryGraceMs` from then
   * @param hurryGraceMs the bound after `hurry`
   * @returns whether everything stopped, how long it took, and what is still running
   */
  async stop(
    deadlineMs: number = STOP_DEADLINE_MS,
    hurry?: AbortSignal,
    hurryGraceMs: number = HURRY_GRACE_MS,
  ): Promise<StopOutcome> {
    const began = performance.now();
    let timer: ReturnType<typeof setTimeout> | undefined;
    let endNow: () => void = () => {};
    const deadline = new Promise<"deadline">((resolve) => {
      timer = setTimeout(() => resolve("deadline"), deadlineMs);
      endNow = () => resolve("deadline");
    });
    let hurryTimer: ReturnType<typeof setTimeout> | undefined;
    const onHurry = () => {
      this.#log.warn("Stopping everything at once; exiting within {graceMs} ms", {
        graceMs: hurryGraceMs,
      });
      for (const controller of this.#controllers.values()) controller.abort();
      hurryTimer = setTimeout(endNow, hurryGraceMs);
    };
    if (hurry?.aborted) onHurry();
    else hurry?.addEventListener("abort", onHurry, { once: true });
    try {
      for (const step of STOP_STEPS) {
        const stepBegan = performance.now();
        this.#controllers.get(step)!.abort();
        const parts = this.#parts.get(step)!;
        const result = await Promise.race([
          Promise.all(parts.map((p) => p.promise)).then(() => "stopped" as const),
          deadline,
        ]);
        if (result === "deadline") {
          const pending = STOP_STEPS.flatMap((s) => this.#parts.get(s)!)
            .filter((p) => !p.done).map((p) => p.name);
          const ms = performance.now() - began;
          this.#log.error(
            "Stop deadline of {deadlineMs} ms passed; still running: {pending}. Exiting anyway",
            { deadlineMs, pending: pending.join(", "), step },
          );
          return { ok: false, ms, pending };
        }
        this.#log.debug("Stopped {step} in {ms} ms", {
          step,
          ms: Math.round(performance.now() - stepBegan),
          parts: parts.map((p) => p.name).join(", "),
        });
      }
      return { ok: true, ms: performance.now() - began, pending: [] };
    } finally {
      clearTimeout(timer);
      clearTimeout(hurryTimer);
      hurry?.removeEventListener("abort", onHurry);
    }
  }
}
