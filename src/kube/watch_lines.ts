/**
 * Framing of a watch response: newline-delimited JSON arriving in arbitrary chunks (an event can be
 * split across chunks, several can share one), each line bounded. Pure; `watch_events.ts` feeds it.
 *
 * @module
 */
import { ResponseTooLargeError } from "./bounded_body.ts";

/** One decoded watch event as the API server sends it. */
export interface RawWatchEvent {
  /** `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`. */
  type: string;
  /** The object (plain JSON), or a `Status` for `ERROR`. */
  object: unknown;
}

/**
 * Splits a stream of text chunks into complete lines, keeping the unfinished tail. A line longer
 * than the bound fails as soon as its tail passes it, so a stream without newlines cannot grow
 * the tail without end.
 */
export class LineSplitter {
  #tail = "";
  readonly #maxLength: number;

  /**
   * @param maxLength the longest line, in UTF-16 code units (never more than its UTF-8 bytes);
   *   unbounded when omitted
   */
  constructor(maxLength = Infinity) {
    this.#maxLength = maxLength;
  }

  /**
   * Adds a chunk and returns the lines it completed (without the newline; empty lines dropped).
   * @param chunk decoded text
   * @returns complete lines, in order
   * @throws {ResponseTooLargeError} when a line, finished or not, is longer than the bound
   */
  push(chunk: string): string[] {
    const newline = chunk.indexOf("\n");
    // The usual chunk is exactly one event ending in its newline: no split, no copies.
    if (this.#tail === "" && newline === chunk.length - 1) {
      this.#check(chunk.length - 1);
      const line = chunk.trim();
      return line === "" ? [] : [line];
    }
    // Part of a long line: appended (a string rope, no copy) until its newline arrives.
    if (newline === -1) {
      this.#check(this.#tail.length + chunk.length);
      this.#tail += chunk;
      return [];
    }
    const text = this.#tail + chunk;
    const parts = text.split("\n");
    this.#tail = parts.pop() ?? "";
    this.#check(this.#tail.length);
    for (const part of parts) this.#check(part.length);
    return parts.map((line) => line.trim()).filter((line) => line !== "");
  }

  #check(length: number): void {
    if (length > this.#maxLength) {
      this.#tail = "";
      throw new ResponseTooLargeError("one watch event", this.#maxLength);
    }
  }

  /**
   * Ends the stream.
   * @returns the last line when the stream did not end with a newline
   */
  flush(): string | undefined {
    const rest = this.#tail.trim();
    this.#tail = "";
    return rest === "" ? undefined : rest;
  }

  /** Characters waiting for their newline. */
  get pending(): number {
    return this.#tail.length;
  }
}

/**
 * Parses one watch line.
 * @param line a complete JSON line
 * @returns the event
 * @throws {SyntaxError} when the line is not a JSON watch event
 */
export function parseWatchLine(line: string): RawWatchEvent {
  const value: unknown = JSON.parse(line);
  if (
    typeof value !== "object" || value === null ||
    typeof (value as { type?: unknown }).type !== "string"
  ) {
    throw new SyntaxError(`Cannot parse watch event: no "type" in ${line.slice(0, 80)}`);
  }
  const event = value as { type: string; object?: unknown };
  return { type: event.type, object: event.object };
}
