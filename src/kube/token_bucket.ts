/**
 * The one token bucket, like client-go's `flowcontrol.NewTokenBucketRateLimiter(qps, burst)`:
 * the Kubernetes client's request rate limit, and the overall bucket of the work queues'
 * `bucketRateLimiter`. The bucket itself is pure (it is given the time); `wait()` adds the
 * sleeping.
 *
 * @module
 */
import { delay } from "./delay.ts";

/** Default sustained requests per second (client-go's cloud-controller-manager default is 20). */
export const DEFAULT_QPS = 20;
/** Default burst (requests allowed at once after an idle period). */
export const DEFAULT_BURST = 30;

/** Options for `TokenBucket`. */
export interface TokenBucketOptions {
  /** Tokens added per second; 0 or less disables the limit. @default 20 */
  qps?: number;
  /** Bucket size: the most requests allowed back to back. @default 30 */
  burst?: number;
  /** The clock, in milliseconds. @default performance.now */
  now?: () => number;
}

/** A token bucket that hands out reservations: each request takes a token, possibly in the future. */
export class TokenBucket {
  readonly qps: number;
  readonly burst: number;
  #now: () => number;
  #tokens: number;
  #last: number;

  /**
   * @param options rate, burst and clock
   * @throws {RangeError} when burst is below 1 while a rate is set
   */
  constructor(options: TokenBucketOptions = {}) {
    this.qps = options.qps ?? DEFAULT_QPS;
    this.burst = Math.floor(options.burst ?? DEFAULT_BURST);
    if (this.qps > 0 && !(this.burst >= 1)) {
      throw new RangeError(
        `Cannot create a rate limiter: burst must be at least 1, got ${this.burst}`,
      );
    }
    this.#now = options.now ?? (() => performance.now());
    this.#tokens = this.burst;
    this.#last = this.#now();
  }

  /**
   * Takes one token and says how long the caller must wait before using it. Tokens taken ahead
   * of time make the balance negative, so callers queue up fairly (first come, first served).
   * @returns milliseconds to wait, 0 when a token was available now
   */
  reserve(): number {
    if (this.qps <= 0) return 0;
    const now = this.#now();
    const elapsed = Math.max(0, now - this.#last);
    this.#last = now;
    this.#tokens = Math.min(this.burst, this.#tokens + (elapsed * this.qps) / 1000);
    this.#tokens -= 1;
    if (this.#tokens >= 0) return 0;
    return (-this.#tokens * 1000) / this.qps;
  }

  /**
   * Tokens available right now (negative when requests are queued).
   * @returns the current balance
   */
  available(): number {
    if (this.qps <= 0) return Infinity;
    const elapsed = Math.max(0, this.#now() - this.#last);
    return Math.min(this.burst, this.#tokens + (elapsed * this.qps) / 1000);
  }

  /**
   * Waits for a token.
   * @param signal aborts the wait
   * @param sleep how to wait (injectable for tests)
   * @returns the milliseconds waited
   * @throws {DOMException} the signal's reason when aborted, before or while waiting
   */
  async wait(
    signal?: AbortSignal,
    sleep: (ms: number, signal?: AbortSignal) => Promise<void> = delay,
  ): Promise<number> {
    signal?.throwIfAborted();
    const wait = this.reserve();
    if (wait > 0) {
      await sleep(wait, signal);
      signal?.throwIfAborted();
    }
    return wait;
  }
}
