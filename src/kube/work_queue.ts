/**
 * A deduplicating, delaying, rate-limited work queue of object keys with client-go's workqueue
 * semantics, and `runWorkers`, the loop that feeds its keys to a controller's sync function.
 *
 * Guarantees: a key is handed to at most one worker at a time (a key added while it is being
 * processed is marked dirty and queued again by `done`); a key waits in the queue at most once;
 * `addAfter` of a key already waiting keeps the earlier time.
 *
 * One deviation from client-go: after `shutDown()`, `get()` returns `undefined` at once instead of
 * draining the keys still queued; controllers re-list everything when they start again anyway.
 *
 * @module
 */
import type { Registry } from "prom-client";
import type { SyncResult } from "./sync_result.ts";
import { logger } from "../log/logging.ts";
import { type Clock, systemClock, type Timer } from "./clock.ts";
import { KubeApiError } from "./ports.ts";
import { defaultControllerRateLimiter, type RateLimiter } from "./queue_rate_limiters.ts";
import { type QueueMetrics, queueMetrics } from "./_work_queue_metrics.ts";

export type { RateLimiter } from "./queue_rate_limiters.ts";
export { declareQueueMetrics } from "./_work_queue_metrics.ts";

/** Options of `WorkQueue`. */
export interface WorkQueueOptions {
  /** Queue name: the `name` label of the workqueue metrics and the logger category. */
  name: string;
  /** Backoff of `addRateLimited`. @default defaultControllerRateLimiter() */
  rateLimiter?: RateLimiter;
  /** Registry of the workqueue metrics. @default none (no metrics) */
  registry?: Registry;
  /** Time source for delays and durations. @default systemClock() */
  clock?: Clock;
}

/** A work queue of keys (`name` or `namespace/name`). */
export class WorkQueue {
  /** The queue name. */
  readonly name: string;
  #queue: string[] = [];
  #dirty = new Set<string>();
  #processing = new Set<string>();
  #delayed = new Map<string, { readyAt: number; timer: Timer }>();
  #waiters: ((key: string | undefined) => void)[] = [];
  #shuttingDown = false;
  #limiter: RateLimiter;
  #clock: Clock;
  #metrics: QueueMetrics;

  /** @param options name, rate limiter, registry, clock */
  constructor(options: WorkQueueOptions) {
    this.name = options.name;
    this.#clock = options.clock ?? systemClock();
    this.#limiter = options.rateLimiter ?? defaultControllerRateLimiter({ clock: this.#clock });
    this.#metrics = queueMetrics(options.registry, options.name, this.#clock);
  }

  /**
   * Queues `key` unless it is already queued; if a worker holds it, it is queued again on `done`.
   * @param key the object key
   */
  add(key: string): void {
    if (this.#shuttingDown || this.#dirty.has(key)) return;
    this.#metrics.add(key);
    this.#dirty.add(key);
    if (this.#processing.has(key)) return;
    this.#queue.push(key);
    this.#dispatch();
  }

  /**
   * Adds `key` after `ms` milliseconds. If it is already waiting, the earlier time wins.
   * @param key the object key
   * @param ms delay; 0 or less adds now
   */
  addAfter(key: string, ms: number): void {
    if (this.#shuttingDown) return;
    this.#metrics.retry();
    if (!(ms > 0)) {
      this.add(key);
      return;
    }
    const readyAt = this.#clock.now() + ms;
    const waiting = this.#delayed.get(key);
    if (waiting && waiting.readyAt <= readyAt) return;
    waiting?.timer.cancel();
    const timer = this.#clock.setTimer(() => {
      this.#delayed.delete(key);
      this.add(key);
    }, ms);
    this.#delayed.set(key, { readyAt, timer });
  }

  /**
   * Adds `key` after its rate limiter's delay (one more failure of it).
   * @param key the object key
   */
  addRateLimited(key: string): void {
    if (this.#shuttingDown) return;
    this.addAfter(key, this.#limiter.when(key));
  }

  /**
   * Resets `key`'s backoff (call after a successful sync). Does not remove it from the queue.
   * @param key the object key
   */
  forget(key: string): void {
    this.#limiter.forget(key);
  }

  /**
   * @param key the object key
   * @returns how many times `key` was rate-limited since the last `forget`
   */
  numRequeues(key: string): number {
    return this.#limiter.numRequeues(key);
  }

  /**
   * Waits for the next key; the caller must call `done(key)` when finished with it.
   * @param signal stops this wait (the queue keeps running)
   * @returns the key, or undefined once the queue shut down or `signal` aborted
   */
  get(signal?: AbortSignal): Promise<string | undefined> {
    if (this.#shuttingDown || signal?.aborted) return Promise.resolve(undefined);
    const key = this.#queue.shift();
    if (key !== undefined) return Promise.resolve(this.#take(key));
    return new Promise((resolve) => {
      const onAbort = (): void => {
        this.#waiters = this.#waiters.filter((w) => w !== waiter);
        resolve(undefined);
      };
      const waiter = (k: string | undefined): void => {
        signal?.removeEventListener("abort", onAbort);
        resolve(k);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiters.push(waiter);
    });
  }

  /**
   * Marks `key` finished; if it was added meanwhile, it is queued again.
   * @param key a key returned by `get`
   */
  done(key: string): void {
    this.#metrics.done(key);
    this.#processing.delete(key);
    if (this.#dirty.has(key) && !this.#shuttingDown) {
      this.#queue.push(key);
      this.#dispatch();
    }
  }

  /** Stops the queue: pending delays are cancelled, waiters and later `get`s get `undefined`. */
  shutDown(): void {
    if (this.#shuttingDown) return;
    this.#shuttingDown = true;
    for (const { timer } of this.#delayed.values()) timer.cancel();
    this.#delayed.clear();
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const waiter of waiters) waiter(undefined);
    this.#metrics.close();
  }

  /** True once `shutDown()` was called. */
  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  /** @returns how many keys wait to be handed out (not counting delayed or in-process keys) */
  len(): number {
    return this.#queue.length;
  }

  #take(key: string): string {
    this.#processing.add(key);
    this.#dirty.delete(key);
    this.#metrics.get(key);
    return key;
  }

  #dispatch(): void {
    while (this.#waiters.length > 0 && this.#queue.length > 0) {
      const waiter = this.#waiters.shift()!;
      waiter(this.#take(this.#queue.shift()!));
    }
  }
}

/**
 * Runs `count` concurrent loops that take keys from `queue` and sync them, mapping each result:
 * `done` forgets the backoff; `requeue` adds again after `afterMs`; `failed` and retriable adds
 * rate-limited (or after the server's Retry-After when the error is a KubeApiError carrying one);
 * `failed` and not retriable forgets and logs. A sync that throws counts as failed and retriable.
 * @param queue the work queue (shut down when `signal` aborts)
 * @param count number of workers, at least 1
 * @param sync reconciles one key
 * @param signal stops the workers; each finishes its current key first
 * @returns resolves once every worker has stopped
 */
export async function runWorkers(
  queue: WorkQueue,
  count: number,
  sync: (key: string) => Promise<SyncResult>,
  signal: AbortSignal,
): Promise<void> {
  const log = logger("controllers", queue.name);
  const stop = (): void => queue.shutDown();
  if (signal.aborted) stop();
  else signal.addEventListener("abort", stop, { once: true });

  async function worker(): Promise<void> {
    for (;;) {
      const key = await queue.get();
      if (key === undefined) return;
      let result: SyncResult;
      const began = performance.now();
      try {
        result = await sync(key);
      } catch (error) {
        result = { kind: "failed", error, retriable: true };
      }
      // upstream controllers log this at klog V(4): `-v 4` here
      log.trace("Finished syncing {key} in {ms} ms: {result}", {
        key,
        ms: Math.round(performance.now() - began),
        result: result.kind,
      });
      try {
        handle(key, result);
      } finally {
        queue.done(key);
      }
    }
  }

  function handle(key: string, result: SyncResult): void {
    switch (result.kind) {
      case "done":
        queue.forget(key);
        return;
      case "requeue":
        queue.addAfter(key, result.afterMs);
        return;
      case "failed": {
        const { error } = result;
        if (!result.retriable) {
          queue.forget(key);
          log.error("Sync of {key} failed and will not be retried: {error}", { key, error });
          return;
        }
        const retryAfter = error instanceof KubeApiError ? error.retryAfterSeconds : undefined;
        const requeues = queue.numRequeues(key);
        log.warn("Sync of {key} failed, retrying (attempt {requeues}): {error}", {
          key,
          error,
          requeues: requeues + 1,
          retryAfterSeconds: retryAfter,
        });
        if (retryAfter !== undefined) queue.addAfter(key, retryAfter * 1000);
        else queue.addRateLimited(key);
      }
    }
  }

  try {
    await Promise.all(Array.from({ length: Math.max(1, count) }, () => worker()));
  } finally {
    signal.removeEventListener("abort", stop);
  }
}
