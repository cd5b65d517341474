/**
 * Writing an inventory as text, line by line, with comments beside the keys: values are encoded
 * as TOML (inline tables and arrays, so a value is always one line) and every comment is one line
 * of printable text, whatever the imported object held. Pure.
 *
 * @module
 */
import { stringify } from "smol-toml";
import { terminalSafe } from "../text/terminal_safe.ts";

/** A value the importer writes: text, numbers, booleans, and arrays or tables of them. */
export type TomlValue =
  | string
  | number
  | boolean
  | readonly TomlValue[]
  | { readonly [key: string]: TomlValue };

/** Comment text per line (with "# " the lines stay within 100 columns). */
const COMMENT_WIDTH = 98;

const BARE_KEY = /^[A-Za-z0-9_-]+$/;

/**
 * A key as TOML needs it: bare when it may be, quoted otherwise.
 * @param key any key, e.g. `example.com/rack`
 * @returns `rack` or `"example.com/rack"`
 */
export function tomlKey(key: string): string {
  return BARE_KEY.test(key) ? key : tomlString(key);
}

/** A TOML basic string (smol-toml escapes what TOML forbids raw). */
function tomlString(text: string): string {
  return stringify({ v: text }).trim().slice("v = ".length);
}

/**
 * One value on one line: arrays as `[a, b]`, tables as `{ k = v }`.
 * @param value the value
 * @returns its TOML text
 * @example tomlValue({ app: "web" }) // '{ app = "web" }'
 */
export function tomlValue(value: TomlValue): string {
  if (typeof value === "string") return tomlString(value);
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (Array.isArray(value)) return `[${value.map(tomlValue).join(", ")}]`;
  const entries = Object.entries(value as { [key: string]: TomlValue });
  if (entries.length === 0) return "{}";
  return `{ ${entries.map(([k, v]) => `${tomlKey(k)} = ${tomlValue(v)}`).join(", ")} }`;
}

/** The text of an inventory being written, one line at a time. */
export class TomlLines {
  readonly #lines: string[] = [];

  /** Appends `key = value`. */
  set(key: string, value: TomlValue): this {
    this.#lines.push(`${tomlKey(key)} = ${tomlValue(value)}`);
    return this;
  }

  /**
   * Appends a comment: each line of `text` becomes one `# ...` line, with every control
   * character shown as an escape (an imported name cannot end the comment or forge a key).
   */
  comment(text: string): this {
    for (const line of text.split("\n")) {
      const safe = terminalSafe(line).trimEnd();
      if (safe === "") this.#lines.push("#");
      for (const piece of wrap(safe, COMMENT_WIDTH)) this.#lines.push(`# ${piece}`);
    }
    return this;
  }

  /** Appends a table header such as `[bgp]` or `[[pools]]`, after an empty line. */
  table(header: string): this {
    this.blank();
    this.#lines.push(header);
    return this;
  }

  /** Appends an empty line (never two in a row, never first). */
  blank(): this {
    if (this.#lines.length > 0 && this.#lines.at(-1) !== "") this.#lines.push("");
    return this;
  }

  /** Appends raw lines (already TOML). */
  raw(...lines: string[]): this {
    this.#lines.push(...lines);
    return this;
  }

  /** The document, ending in one newline. */
  text(): string {
    const lines = [...this.#lines];
    while (lines.at(-1) === "") lines.pop();
    return lines.join("\n") + "\n";
  }
}

/** Splits a line at spaces so each piece is at most `width` long (a longer word stays whole). */
function wrap(line: string, width: number): string[] {
  const pieces: string[] = [];
  let rest = line;
  while (rest.length > width) {
    const cut = rest.lastIndexOf(" ", width);
    if (cut <= 0) break;
    pieces.push(rest.slice(0, cut));
    rest = rest.slice(cut + 1);
  }
  if (rest !== "") pieces.push(rest);
  return pieces;
}
