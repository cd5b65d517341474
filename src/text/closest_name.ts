/**
 * "Did you mean": the known name nearest to a mistyped one, for inventory keys, commands and
 * flags alike.
 *
 * @module
 */

/**
 * The known name nearest to `name` by edit distance, when near enough to be a typo: at most one
 * edit per three characters (at least one).
 * @param name what was written
 * @param known the names that exist
 * @returns the nearest known name, or undefined when none is near enough
 * @example
 * ```ts
 * closestName("chek", ["check", "plan"]); // "check"
 * closestName("deploy", ["check", "plan"]); // undefined
 * ```
 */
export function closestName(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const distance = editDistance(name.toLowerCase(), candidate);
    if (distance < bestDistance) [best, bestDistance] = [candidate, distance];
  }
  const limit = Math.max(1, Math.floor(name.length / 3));
  return bestDistance <= limit ? best : undefined;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row.push(Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + cost));
    }
    previous = row;
  }
  return previous[b.length]!;
}
