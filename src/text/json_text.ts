/**
 * The one JSON form of every `-o json` output: indented by 2, a newline at the end, and counts
 * as JSON numbers — except a count above 2^53 (IPv6 pool sizes), which no JSON reader keeps
 * exactly as a number and is written as its decimal text instead.
 * Control characters in strings are written as `\uXXXX` escapes (`terminalSafeJson`): the data
 * stays exact for a JSON reader and nothing acts on a terminal the output reaches.
 *
 * @module
 */
import { terminalSafeJson } from "./terminal_safe.ts";

/**
 * A count as JSON carries it.
 * @param n a count (bigint or a whole number)
 * @returns the number when at most `Number.MAX_SAFE_INTEGER`, else its decimal text
 * @example jsonCount(14n) // 14
 * @example jsonCount(2n ** 64n) // "18446744073709551616"
 */
export function jsonCount(n: bigint | number): number | string {
  if (typeof n === "number") {
    return Number.isInteger(n) && n > Number.MAX_SAFE_INTEGER ? BigInt(n).toString() : n;
  }
  return n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n.toString();
}

/**
 * Renders a value as `-o json` does: bigints and unsafe integers through `jsonCount`.
 * @param value the document
 * @returns the JSON text, ending in a newline
 */
export function toJsonText(value: unknown): string {
  return terminalSafeJson(JSON.stringify(
    value,
    (_key, v) =>
      typeof v === "bigint" ||
        (typeof v === "number" && !Number.isSafeInteger(v) && Number.isInteger(v))
        ? jsonCount(v)
        : v,
    2,
  )) + "\n";
}
