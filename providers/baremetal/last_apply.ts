/**
 * An announcer's applier that remembers the outcome of its last apply, for the heartbeat (each
 * announcer reports its own) and for the announcer's own restart checks.
 *
 * @module
 */

/** An applier and the outcome of its last apply (`"none"` before the first). */
export interface RememberingApplier<A extends { result: string }> {
  /** Applies `text` through the wrapped applier and remembers its outcome. */
  apply(text: string): Promise<A>;
  /** @returns the outcome of the last apply that answered, `"none"` before any */
  last(): A["result"] | "none";
}

/**
 * Wraps an applier so that the outcome of its last apply can be read at any time.
 * @param applier the announcer's applier (keepalived's or BIRD's)
 * @returns the wrapped applier
 */
export function rememberLastApply<A extends { result: string }>(
  applier: { apply(text: string): Promise<A> },
): RememberingApplier<A> {
  let last: A["result"] | "none" = "none";
  return {
    async apply(text) {
      const answer = await applier.apply(text);
      last = answer.result;
      return answer;
    },
    last: () => last,
  };
}
