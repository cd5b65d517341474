/**
 * Framing of a watch response: newline-delimited JSON arriving in arbitrary chunks (an event can be
 * split across chunks, several can share one). Pure; `kube_client.ts` feeds it.
 *
 * @module
 */

/** One decoded watch event as the API server sends it. */
export interface RawWatchEvent {
  /** `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`. */
  type: string;
  /** The object (plain JSON), or a `Status` for `ERROR`. */
  object: unknown;
}

/** Splits a stream of text chunks into complete lines, keeping the unfinished tail. */
export class LineSplitter {
  #tail = "";

  /**
   * Adds a chunk and returns the lines it completed (without the newline; empty lines dropped).
   * @param chunk decoded text
   * @returns complete lines, in order
   */
  push(chunk: string): string[] {
    // The usual chunk is exactly one event ending in its newline: no split, no copies.
    if (this.#tail === "" && chunk.indexOf("\n") === chunk.length - 1) {
      const line = chunk.trim();
      return line === "" ? [] : [line];
    }
    const text = this.#tail + chunk;
    const parts = text.split("\n");
    this.#tail = parts.pop() ?? "";
    return parts.map((line) => line.trim()).filter((line) => line !== "");
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
