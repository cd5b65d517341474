/**
 * client-go's `retry.RetryOnConflict`: run a read-modify-write again when the write lost a race
 * (409 Conflict), a bounded number of times with a short jittered wait in between.
 *
 * @module
 */
import { delay } from "./delay.ts";
import { isConflict } from "./ports.ts";

/** How often and how long to retry. */
export interface ConflictBackoff {
  /** Attempts in all, at least 1. */
  steps: number;
  /** The wait between attempts, in milliseconds. */
  delayMs: number;
  /** Each wait is `delayMs * (1 + jitter * random)`. @default 0 */
  jitter?: number;
  /** Cuts waits short; no attempt starts after it aborted. */
  signal?: AbortSignal;
  /** How to wait (injectable for tests). @default delay */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/**
 * Runs `attempt` until it does not throw a Conflict, at most `backoff.steps` times.
 * @param backoff attempts, wait, jitter, stop signal
 * @param attempt reads the current object, modifies it and writes it
 * @returns what the successful attempt returned
 * @throws the first error that is not a Conflict, the last Conflict, or the signal's reason
 */
export async function retryOnConflict<T>(
  backoff: ConflictBackoff,
  attempt: () => Promise<T>,
): Promise<T> {
  const sleep = backoff.sleep ?? delay;
  for (let step = 1;; step++) {
    try {
      return await attempt();
    } catch (error) {
      if (!isConflict(error) || step >= backoff.steps) throw error;
      await sleep(backoff.delayMs * (1 + (backoff.jitter ?? 0) * Math.random()), backoff.signal);
      backoff.signal?.throwIfAborted();
    }
  }
}
