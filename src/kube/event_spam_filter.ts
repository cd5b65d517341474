/**
 * client-go's per-object spam filter for Events (`EventSourceObjectSpamFilter`): each recorder
 * component and involved object (kind, namespace, name, uid, apiVersion; type, reason and message
 * do not count) has a token bucket of 25 Events, refilled with one every 5 minutes. An Event
 * that finds the bucket empty is not written. An object that changes often (a Service's hosts
 * updated for every Node of a burst) then costs the API server 25 writes, not one per change.
 *
 * @module
 */

/** Events one source may write about one object at once (client-go: 25). */
export const SPAM_BURST = 25;
/** One more Event allowed per this long (client-go: 1/300 per second). */
export const SPAM_REFILL_MS = 300_000;
/** Buckets remembered at most, least recently used dropped first (client-go's LRU size). */
const MAX_BUCKETS = 4096;

interface Bucket {
  tokens: number;
  atMs: number;
}

/** Token buckets by source and involved object. */
export class EventSpamFilter {
  #buckets = new Map<string, Bucket>();

  /**
   * Takes one token from the key's bucket.
   * @param key the source and involved object (any string that tells them apart)
   * @param nowMs the recorder's clock
   * @returns true when the Event may be written, false when it is to be skipped
   */
  allow(key: string, nowMs: number): boolean {
    const bucket = this.#buckets.get(key) ?? { tokens: SPAM_BURST, atMs: nowMs };
    this.#buckets.delete(key);
    this.#buckets.set(key, bucket);
    if (this.#buckets.size > MAX_BUCKETS) {
      this.#buckets.delete(this.#buckets.keys().next().value!);
    }
    const elapsed = Math.max(0, nowMs - bucket.atMs);
    bucket.tokens = Math.min(SPAM_BURST, bucket.tokens + elapsed / SPAM_REFILL_MS);
    bucket.atMs = nowMs;
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }
}
