/**
 * Durations such as `"15s"`: the one parser (`parseDuration`) and the value a validated Config
 * carries (`Duration`: the text as written, for people, and its milliseconds, for timers). The
 * schema (`duration` in schema.ts) and the command-line flags both go through `parseDuration`.
 *
 * @module
 */

declare const parsed: unique symbol;

/**
 * A parsed duration: `text` as the file or flag wrote it (shown in `check`, logs and the
 * restart-required diff), `ms` its milliseconds (read by every timer). Only `parseDuration` makes
 * one, so a `Duration` in a Config always has `ms` read from its `text`.
 */
export interface Duration {
  /** As written, e.g. `"1.5s"`. */
  readonly text: string;
  /** Milliseconds, e.g. `1500`; within the setting's bounds once the schema accepted it. */
  readonly ms: number;
  /** Type-only brand: a `{ text, ms }` literal is not a Duration. */
  readonly [parsed]: true;
}

/** The syntax: a decimal number (at most 9 + 6 digits) and one unit. */
export const DURATION_REGEXP = /^(\d{1,9}(?:\.\d{1,6})?)(ms|s|m|h)$/;

/** Milliseconds per unit. */
const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;

/**
 * Reads a duration text.
 * @param text e.g. `"1.5s"`
 * @returns e.g. `{ text: "1.5s", ms: 1500 }`, or undefined when `text` is not a duration
 * @example
 * ```ts
 * parseDuration("200ms")?.ms; // 200
 * parseDuration("15 s"); // undefined
 * ```
 */
export function parseDuration(text: string): Duration | undefined {
  const match = DURATION_REGEXP.exec(text);
  if (!match) return undefined;
  // ms as an integer where possible: "0.1s" is 100, not 100.00000000000001
  const ms = Math.round(Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS] * 1e6) /
    1e6;
  return { text, ms } as Duration;
}

/**
 * Whether a value is a parsed duration (a validated Config fed back to the schema, as `keelson
 * run` does after applying its flags, holds these rather than text).
 * @param value anything
 * @returns true for an object with a string `text` and a number `ms`
 */
export function isDuration(value: unknown): value is Duration {
  return value !== null && typeof value === "object" &&
    typeof (value as { text?: unknown }).text === "string" &&
    typeof (value as { ms?: unknown }).ms === "number";
}
