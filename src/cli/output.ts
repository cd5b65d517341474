/**
 * Writing command output: results to stdout, diagnostics to stderr. The only place CLI code
 * writes to the terminal directly.
 *
 * @module
 */
const encoder = new TextEncoder();

/** Writes `text` and a newline to stdout. */
export function print(text: string): void {
  writeAll(Deno.stdout, encoder.encode(text.endsWith("\n") ? text : text + "\n"));
}

/** Writes `text` and a newline to stderr. */
export function printError(text: string): void {
  writeAll(Deno.stderr, encoder.encode(text.endsWith("\n") ? text : text + "\n"));
}

function writeAll(target: { writeSync(p: Uint8Array): number }, bytes: Uint8Array): void {
  let offset = 0;
  while (offset < bytes.length) offset += target.writeSync(bytes.subarray(offset));
}
