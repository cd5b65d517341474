/**
 * The tagged result of one reconcile of one key, and its constructors. `runWorkers`
 * (src/kube/work_queue.ts) maps each kind onto the work queue: `done` forgets the key's backoff,
 * `requeue` adds it again after a fixed delay, `failed` retries with backoff when retriable and
 * drops it with a log line otherwise.
 *
 * @module
 */

/** What a sync of one key asks the work queue to do next. */
export type SyncResult =
  | { kind: "done" }
  | { kind: "requeue"; afterMs: number }
  | { kind: "failed"; error: unknown; retriable: boolean };

/** Options of `failed()`. */
export interface FailedOptions {
  /** Whether another attempt could succeed (retry with backoff) or not (drop with a log line). */
  retriable: boolean;
}

/**
 * The key is in its desired state; its backoff is reset.
 * @returns `{ kind: "done" }`
 */
export function done(): SyncResult {
  return { kind: "done" };
}

/**
 * Sync the key again after `ms` milliseconds (polling, e.g. "load balancer still provisioning").
 * @param ms delay in milliseconds, at least 0
 * @returns `{ kind: "requeue", afterMs }`
 * @throws {RangeError} when `ms` is negative or not a finite number
 */
export function requeueAfter(ms: number): SyncResult {
  if (!Number.isFinite(ms) || ms < 0) {
    throw new RangeError(`Cannot requeue after ${ms} ms: the delay must be a finite number >= 0`);
  }
  return { kind: "requeue", afterMs: ms };
}

/**
 * The sync failed.
 * @param error what went wrong (logged with the key)
 * @param options whether a retry could help
 * @returns `{ kind: "failed", error, retriable }`
 */
export function failed(error: unknown, options: FailedOptions): SyncResult {
  return { kind: "failed", error, retriable: options.retriable };
}
