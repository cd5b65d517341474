/**
 * Finding the line of a key or array element in TOML text, so every config issue can say
 * `keelson.toml:14:`. smol-toml returns plain values without positions, so this scans the text
 * once with a small, lenient reader that understands just enough TOML to follow paths: `[table]`
 * and `[[array]]` headers (counted), dotted and quoted keys, strings of all four kinds, and
 * arrays and inline tables spanning lines.
 *
 * @module
 */

/** One step of a path: a key or an array index (zod's `PropertyKey[]` narrowed). */
export type PathSegment = string | number;

/** Map from `formatPath(path)` to the 1-based line where that key or element starts. */
export type LineIndex = Map<string, number>;

const BARE_KEY_REGEXP = /^[A-Za-z0-9_-]+$/;

/**
 * Renders a path the way issues show it: `machines[3].internal_ips[0]`,
 * `machines[0].labels["example.com/disk"]`.
 * @param path keys and indices from the root
 * @returns the dotted text; empty for the root
 */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const segment of path) {
    if (typeof segment === "number") out += `[${segment}]`;
    else if (typeof segment === "string" && BARE_KEY_REGEXP.test(segment)) {
      out += out === "" ? segment : `.${segment}`;
    } else out += `[${JSON.stringify(String(segment))}]`;
  }
  return out;
}

/**
 * Scans TOML text and records the line of every key, table header and array element.
 * Never throws: on text it cannot follow it stops and keeps what it found so far.
 * @param text the TOML document
 * @returns the index for `locateLine`
 */
export function indexLines(text: string): LineIndex {
  const reader = new Reader(text);
  try {
    reader.document();
  } catch {
    // malformed text: the lines recorded so far are still right
  }
  return reader.index;
}

/**
 * The line of `path` in the document, or of its nearest ancestor that appears in the text
 * (a missing required key points at its table).
 * @param source TOML text, or an index built by `indexLines` when locating many paths
 * @param path keys and indices, e.g. `["machines", 3, "internal_ips", 0]`
 * @returns the 1-based line, or undefined when nothing on the path is written in the file
 */
export function locateLine(
  source: string | LineIndex,
  path: readonly PropertyKey[],
): number | undefined {
  const index = typeof source === "string" ? indexLines(source) : source;
  for (let length = path.length; length > 0; length--) {
    const line = index.get(formatPath(path.slice(0, length)));
    if (line !== undefined) return line;
  }
  return undefined;
}

class Reader {
  readonly index: LineIndex = new Map();
  #text: string;
  #pos = 0;
  #line = 1;
  /** Element counts of arrays of tables, by the formatted path of the array. */
  #arrayTables = new Map<string, number>();

  constructor(text: string) {
    this.#text = text;
  }

  document(): void {
    let table: PathSegment[] = [];
    for (;;) {
      this.#skipBlank(true);
      if (this.#pos >= this.#text.length) return;
      if (this.#peek() === "[") {
        table = this.#header();
      } else {
        this.#keyValue(table);
      }
      this.#skipToLineEnd();
    }
  }

  #header(): PathSegment[] {
    const line = this.#line;
    const isArray = this.#text.startsWith("[[", this.#pos);
    this.#pos += isArray ? 2 : 1;
    const keys = this.#key();
    this.#pos += isArray ? 2 : 1;
    const path = this.#resolve(keys);
    if (isArray) {
      const name = formatPath(path);
      const count = this.#arrayTables.get(name) ?? 0;
      this.#arrayTables.set(name, count + 1);
      this.#record(path, line);
      path.push(count);
    }
    this.#record(path, line);
    return path;
  }

  /** Header keys to a path: a prefix naming an array of tables means its last element. */
  #resolve(keys: string[]): PathSegment[] {
    const path: PathSegment[] = [];
    for (const [i, key] of keys.entries()) {
      path.push(key);
      const count = this.#arrayTables.get(formatPath(path));
      if (count !== undefined && i < keys.length - 1) path.push(count - 1);
    }
    return path;
  }

  #keyValue(table: PathSegment[]): void {
    const line = this.#line;
    const keys = this.#key();
    if (keys.length === 0) throw new SyntaxError("expected a key");
    for (let i = 1; i <= keys.length; i++) this.#record([...table, ...keys.slice(0, i)], line);
    this.#skipBlank(false);
    if (this.#peek() !== "=") throw new SyntaxError("expected =");
    this.#pos++;
    this.#skipBlank(false);
    this.#value([...table, ...keys]);
  }

  #key(): string[] {
    const keys: string[] = [];
    for (;;) {
      this.#skipBlank(false);
      const c = this.#peek();
      if (c === '"' || c === "'") keys.push(this.#string());
      else {
        const match = /^[A-Za-z0-9_-]+/.exec(this.#text.slice(this.#pos, this.#pos + 256));
        if (!match) return keys;
        keys.push(match[0]);
        this.#pos += match[0].length;
      }
      this.#skipBlank(false);
      if (this.#peek() !== ".") return keys;
      this.#pos++;
    }
  }

  #value(path: PathSegment[]): void {
    const c = this.#peek();
    if (c === '"' || c === "'") this.#string();
    else if (c === "[") this.#array(path);
    else if (c === "{") this.#inlineTable(path);
    else {
      // numbers, booleans, dates: up to a delimiter
      const match = /^[^\s,\]}#]+/.exec(this.#text.slice(this.#pos, this.#pos + 256));
      if (!match) throw new SyntaxError("expected a value");
      this.#pos += match[0].length;
      // a local date-time may hold one space: 1979-05-27 07:32:00
      if (/^\d{4}-\d{2}-\d{2}$/.test(match[0]) && /^ \d/.test(this.#text.slice(this.#pos))) {
        this.#pos++;
        this.#pos += /^[^\s,\]}#]*/.exec(this.#text.slice(this.#pos))![0].length;
      }
    }
  }

  #array(path: PathSegment[]): void {
    this.#pos++;
    for (let i = 0;; i++) {
      this.#skipBlank(true);
      if (this.#peek() === "]" || this.#pos >= this.#text.length) break;
      this.#record([...path, i], this.#line);
      this.#value([...path, i]);
      this.#skipBlank(true);
      if (this.#peek() === ",") this.#pos++;
    }
    this.#pos++;
  }

  #inlineTable(path: PathSegment[]): void {
    this.#pos++;
    for (;;) {
      this.#skipBlank(true);
      if (this.#peek() === "}" || this.#pos >= this.#text.length) break;
      this.#keyValue(path);
      this.#skipBlank(true);
      if (this.#peek() === ",") this.#pos++;
    }
    this.#pos++;
  }

  /** Reads a string of any kind and returns its (roughly unescaped) content. */
  #string(): string {
    const quote = this.#peek();
    const multi = this.#text.startsWith(quote.repeat(3), this.#pos);
    const delimiter = multi ? quote.repeat(3) : quote;
    this.#pos += delimiter.length;
    let out = "";
    while (this.#pos < this.#text.length) {
      if (this.#text.startsWith(delimiter, this.#pos)) {
        this.#pos += delimiter.length;
        // a multi-line string may end with up to two quotes of its own before the delimiter
        for (let extra = 0; multi && extra < 2 && this.#peek() === quote; extra++) this.#pos++;
        return out;
      }
      const c = this.#text[this.#pos]!;
      if (c === "\n") {
        if (!multi) throw new SyntaxError("unterminated string");
        this.#line++;
      }
      if (c === "\\" && quote === '"') {
        const next = this.#text[this.#pos + 1] ?? "";
        out += ESCAPES[next] ?? next;
        if (next === "\n") this.#line++;
        this.#pos += 2;
        continue;
      }
      out += c;
      this.#pos++;
    }
    throw new SyntaxError("unterminated string");
  }

  /** Skips spaces and comments; with `newlines`, line breaks too. */
  #skipBlank(newlines: boolean): void {
    while (this.#pos < this.#text.length) {
      const c = this.#text[this.#pos]!;
      if (c === " " || c === "\t" || c === "\r") this.#pos++;
      else if (c === "#") {
        while (this.#pos < this.#text.length && this.#text[this.#pos] !== "\n") this.#pos++;
      } else if (c === "\n" && newlines) {
        this.#pos++;
        this.#line++;
      } else return;
    }
  }

  #skipToLineEnd(): void {
    while (this.#pos < this.#text.length && this.#text[this.#pos] !== "\n") this.#pos++;
  }

  #peek(): string {
    return this.#text[this.#pos] ?? "";
  }

  #record(path: PathSegment[], line: number): void {
    const key = formatPath(path);
    if (!this.index.has(key)) this.index.set(key, line);
  }
}

const ESCAPES: Record<string, string> = {
  n: "\n",
  t: "\t",
  r: "\r",
  b: "\b",
  f: "\f",
  '"': '"',
  "\\": "\\",
};
