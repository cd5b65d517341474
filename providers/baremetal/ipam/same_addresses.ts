/**
 * Whether two address lists hold the same addresses: the load balancer (is the status showing
 * what was assigned?), the allocator (does a Service keep what it asked for?) and the offline
 * plan (kept or allocated?) ask it alike.
 *
 * @module
 */

/**
 * @param a address texts (canonical form, so equal addresses are equal strings)
 * @param b address texts
 * @returns true when both hold the same addresses, in any order, as many times each
 */
export function sameAddresses(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  const left = [...a].sort();
  const right = [...b].sort();
  return left.every((value, index) => value === right[index]);
}
