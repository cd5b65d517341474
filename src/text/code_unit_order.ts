/**
 * Sorting names (hosts, pools, VIPs, peers, zones) in UTF-16 code-unit order rather than with
 * `localeCompare`: the order is the same on every host whatever its locale, and the agent never
 * loads ICU's collation data for it (the first `localeCompare` costs a Deno process ~4 MB of RSS).
 *
 * @module
 */

/**
 * Compares two strings by UTF-16 code units, for `Array.prototype.sort`.
 * @param a one string
 * @param b the other
 * @returns negative when `a` sorts first, positive when `b` does, 0 when equal
 * @example
 * ```ts
 * ["b", "B", "a"].sort(compareCodeUnits); // ["B", "a", "b"]
 * ```
 */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
