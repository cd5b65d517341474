// deno-lint-ignore-file no-control-regex -- matching control characters is the point
/**
 * Text from outside Keelson (the API, a heartbeat, a snapshot, a file, a flag) made safe to show
 * on a terminal. Every character a terminal or a text renderer acts on instead of drawing — C0
 * controls, DEL, C1 controls (U+0080–U+009F: UTF-8 terminals read U+009B as CSI), the line and
 * paragraph separators (U+2028, U+2029) and the bidirectional embeddings, overrides and isolates
 * (U+202A–U+202E, U+2066–U+2069, which reorder what is shown) — is written as a visible escape
 * (`\x1b`, `\u009b`, `\u202e`), so no value can move the cursor, clear the screen, retitle the
 * window, forge a line or reorder a line.
 *
 * Three shapes, for the three kinds of output:
 * - `terminalSafe`: one value (a table cell, a log value): newline, CR and tab too (`\n`).
 * - `terminalSafeLines`: text laid out by Keelson (`check`, `plan`, error messages): newline and
 *   tab are kept, everything else escaped; with `sgr`, the colour codes Keelson paints with too.
 * - `terminalSafeJson`: JSON text (`--output json`): the characters JSON.stringify leaves raw are
 *   written as `\uXXXX` escapes, which a JSON reader decodes to the very same string, so the data
 *   stays exact and the terminal sees no control character.
 *
 * A backslash is left as it is: a value holding the text `\x1b` shows the same as an escaped ESC,
 * which is harmless (it is only shown).
 *
 * @module
 */

const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
// the same, except newline and tab
const UNSAFE_IN_LINES =
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
// the same, except Keelson's own colour codes (Select Graphic Rendition: ESC [ digits ; m)
const UNSAFE_IN_STYLED_LINES =
  /\x1b\[[0-9;]{0,16}m|[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
// what JSON.stringify leaves raw in a string: DEL, C1, separators, bidi controls (it escapes C0)
const UNSAFE_IN_JSON = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const NAMED: Readonly<Record<string, string>> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/** `\x1b` below U+0100, `\u202e` above; newline, CR and tab by name. */
function visible(c: string): string {
  const named = NAMED[c];
  if (named !== undefined) return named;
  const code = c.charCodeAt(0);
  return code < 0x100
    ? `\\x${code.toString(16).padStart(2, "0")}`
    : `\\u${code.toString(16).padStart(4, "0")}`;
}

/**
 * One value on one line: every control character, newline and tab included, shown as an escape.
 * @param text any text
 * @returns the text with nothing a terminal acts on
 * @example
 * ```ts
 * terminalSafe("cp-1\x1b]0;owned\x07\nHealthy"); // "cp-1\\x1b]0;owned\\x07\\nHealthy"
 * ```
 */
export function terminalSafe(text: string): string {
  return text.replace(UNSAFE, visible);
}

/**
 * Foreign text quoted inside Keelson's own message (a server's error text): one line, escaped as
 * `terminalSafe` does, and cut to a bound so a megabyte of it cannot flood a terminal or a log.
 * @param text any text
 * @param maxLength the most characters of `text` kept
 * @returns the escaped text, ending in `… (N more characters)` when cut
 */
export function terminalSafeExcerpt(text: string, maxLength: number): string {
  if (text.length <= maxLength) return terminalSafe(text);
  return `${terminalSafe(text.slice(0, maxLength))}… (${text.length - maxLength} more characters)`;
}

/**
 * Text laid out in lines by Keelson: newline and tab are kept, every other control character is
 * shown as an escape. With `sgr`, colour codes (`ESC [ … m`, which only change colours) are kept
 * too; every other escape sequence is broken up (its ESC shown as `\x1b`).
 * @param text the text to write
 * @param options `sgr`: keep colour codes
 * @returns the text with nothing a terminal acts on but line breaks, tabs (and colours)
 */
export function terminalSafeLines(text: string, options: { sgr?: boolean } = {}): string {
  if (!options.sgr) return text.replace(UNSAFE_IN_LINES, visible);
  return text.replace(
    UNSAFE_IN_STYLED_LINES,
    (match) => match.length > 1 ? match : visible(match),
  );
}

/**
 * JSON text made safe for a terminal without changing its data: DEL, C1 controls, the separators
 * and the bidi controls inside strings become `\uXXXX` escapes (outside strings JSON has none).
 * @param json text from `JSON.stringify`
 * @returns equivalent JSON: `JSON.parse` gives the same value
 */
export function terminalSafeJson(json: string): string {
  return json.replace(
    UNSAFE_IN_JSON,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/**
 * A log value as the text log formatter shows it (`value` of logtape's `getTextFormatter`): as
 * `inspect` renders it, on one line, control characters escaped, so a value cannot forge a log
 * line or repaint the terminal the log is read on.
 * @param value the value
 * @param inspect logtape's renderer
 * @returns the text
 */
export function terminalSafeLogValue(value: unknown, inspect: (value: unknown) => string): string {
  return terminalSafe(inspect(value));
}
