/**
 * Values inside a log message as plain text. logtape renders each value of a message template
 * with `Deno.inspect` (text) or `JSON.stringify` (JSON lines), so a string value arrives quoted,
 * and a JSON line quotes it a second time: an error text holding a quoted path became
 * `"\"Cannot read kubeconfig \\\"…"`, and on a terminal `Deno.inspect` switched to `'…'` for
 * any text holding a double quote. A message is prose for a reader; the values stay exact and
 * typed in the JSON line's `properties`. A template quotes a value itself where a reader needs
 * to see where it starts and ends.
 *
 * @module
 */
import type { LogRecord, TextFormatter } from "@logtape/logtape";

/**
 * The text of one message value: strings as they are, errors as their message (with the error's
 * name unless it is the plain `Error`), numbers, booleans and bigints as written in source;
 * anything else (arrays, objects) by `fallback`.
 * @param value a value of the message template
 * @param fallback how other values are rendered (`Deno.inspect`, `JSON.stringify`)
 * @returns the text put into the message
 */
export function plainLogValue(value: unknown, fallback: (value: unknown) => string): string {
  if (typeof value === "string") return value;
  if (value instanceof Error) {
    return value.name === "Error" ? value.message : `${value.name}: ${value.message}`;
  }
  if (
    typeof value === "number" || typeof value === "boolean" || typeof value === "bigint" ||
    value === null || value === undefined
  ) {
    return String(value);
  }
  return fallback(value) ?? String(value);
}

/**
 * The record's message as one plain text (see the module documentation).
 * @param record a log record
 * @returns the message with every value rendered by `plainLogValue`
 */
export function plainMessage(record: LogRecord): string {
  return record.message
    .map((part, i) => i % 2 === 0 ? String(part) : plainLogValue(part, jsonText))
    .join("");
}

/**
 * A formatter that sees the message already rendered as plain text: for the JSON-lines
 * formatter, which would otherwise `JSON.stringify` every value into the message.
 * @param formatter the formatter to wrap
 * @returns a formatter whose records have a one-part message
 */
export function withPlainMessage(formatter: TextFormatter): TextFormatter {
  return (record: LogRecord) => formatter({ ...record, message: [plainMessage(record)] });
}

function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value); // a cycle or a bigint inside: still a line, never a thrown log call
  }
}
