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

/**
 * Thrown by `print` when stdout was closed by its reader (`keelson plan | head -1`): the command
 * stops, and `dispatch` ends the process quietly.
 */
export class StdoutClosedError extends Error {
  constructor() {
    super("stdout was closed");
    this.name = "StdoutClosedError";
  }
}

function writeAll(target: { writeSync(p: Uint8Array): number }, bytes: Uint8Array): void {
  let offset = 0;
  try {
    while (offset < bytes.length) offset += target.writeSync(bytes.subarray(offset));
  } catch (error) {
    if (error instanceof Deno.errors.BrokenPipe) {
      if (target === Deno.stdout) throw new StdoutClosedError();
      return; // stderr closed: nowhere left to say anything
    }
    throw error;
  }
}
