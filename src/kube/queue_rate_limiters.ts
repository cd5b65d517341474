/**
 * Rate limiters for `WorkQueue.addRateLimited`, with client-go's workqueue semantics: a limiter
 * says how long a key must wait before its next attempt, counts the attempts, and `forget`
 * resets the count once the key synced.
 *
 * @module
 */
import { type Clock, systemClock } from "./clock.ts";
import { TokenBucket } from "./token_bucket.ts";

/** Decides how long a key waits before it is retried. */
export interface RateLimiter {
  /**
   * Records one more failure of `key` and returns how long it must wait.
   * @param key the work queue key
   * @returns the delay in milliseconds
   */
  when(key: string): number;
  /** Forgets `key`'s failures (it synced). */
  forget(key: string): void;
  /** How many times `key` has been rate-limited since the last `forget`. */
  numRequeues(key: string): number;
}

/**
 * Per-key exponential backoff: `baseMs * 2^failures`, capped at `maxMs`.
 * @param baseMs the first delay
 * @param maxMs the largest delay
 * @returns a RateLimiter
 * @throws {RangeError} when `baseMs` is not positive or `maxMs` is below `baseMs`
 */
export function itemExponentialRateLimiter(baseMs: number, maxMs: number): RateLimiter {
  if (!(baseMs > 0) || !(maxMs >= baseMs)) {
    throw new RangeError(
      `Cannot build a backoff from ${baseMs} ms to ${maxMs} ms: need 0 < base <= max`,
    );
  }
  const failures = new Map<string, number>();
  return {
    when(key: string): number {
      const n = failures.get(key) ?? 0;
      failures.set(key, n + 1);
      // 2^n overflows to Infinity past n=1023; Math.min keeps the cap either way
      return Math.min(baseMs * 2 ** n, maxMs);
    },
    forget: (key: string) => void failures.delete(key),
    numRequeues: (key: string) => failures.get(key) ?? 0,
  };
}

/** Options of `bucketRateLimiter`. */
export interface BucketRateLimiterOptions {
  /** Time source. @default systemClock() */
  clock?: Clock;
}

/**
 * A token bucket shared by all keys (golang.org/x/time/rate semantics, `TokenBucket`): `burst`
 * tokens at most, refilled at `qps` per second; each `when` reserves one token and returns the
 * wait until it is available.
 * @param qps refill rate in tokens per second
 * @param burst bucket size
 * @param options the clock
 * @returns a RateLimiter whose `numRequeues` is always 0
 * @throws {RangeError} when `qps` or `burst` is not positive
 */
export function bucketRateLimiter(
  qps: number,
  burst: number,
  options: BucketRateLimiterOptions = {},
): RateLimiter {
  if (!(qps > 0) || !(burst >= 1)) {
    throw new RangeError(
      `Cannot build a token bucket of ${qps} qps, burst ${burst}: need both > 0`,
    );
  }
  const clock = options.clock ?? systemClock();
  const bucket = new TokenBucket({ qps, burst, now: () => clock.now() });
  return {
    when: () => bucket.reserve(),
    forget: () => {},
    numRequeues: () => 0,
  };
}

/**
 * Combines limiters: the delay is the longest of theirs, `numRequeues` the largest.
 * @param limiters the limiters to consult, all of them on every call
 * @returns a RateLimiter
 */
export function maxOfRateLimiter(...limiters: RateLimiter[]): RateLimiter {
  return {
    when: (key: string) => Math.max(0, ...limiters.map((l) => l.when(key))),
    forget: (key: string) => limiters.forEach((l) => l.forget(key)),
    numRequeues: (key: string) => Math.max(0, ...limiters.map((l) => l.numRequeues(key))),
  };
}

/**
 * client-go's `DefaultControllerRateLimiter`: per key 5 ms doubling up to 1000 s, and at most
 * 10 retries per second overall with a burst of 100. Used by the cloud-node controller.
 * @param options the clock for the token bucket
 * @returns a RateLimiter
 */
export function defaultControllerRateLimiter(options: BucketRateLimiterOptions = {}): RateLimiter {
  return maxOfRateLimiter(
    itemExponentialRateLimiter(5, 1_000_000),
    bucketRateLimiter(10, 100, options),
  );
}

/**
 * The service controller's limiter: per key 5 s doubling up to 300 s, no global bucket.
 * @returns a RateLimiter
 */
export function serviceRateLimiter(): RateLimiter {
  return itemExponentialRateLimiter(5_000, 300_000);
}
