/**
 * Writing command output: results to stdout, diagnostics to stderr. The only place CLI code
 * writes to the terminal directly, and the last edge before it: whatever a command prints, no
 * control character but newline and tab reaches the terminal (`terminal_safe.ts`); values are
 * escaped earlier, where the output is laid out, so one cannot forge a line either.
 *
 * @module
 */
import { terminalSafeLines } from "../text/terminal_safe.ts";

const encoder = new TextEncoder();

/** Writes `text` and a newline to stdout, control characters escaped. */
export function print(text: string): void {
  writeLine(Deno.stdout, terminalSafeLines(text));
}

/**
 * Writes coloured `text` and a newline to stdout: Keelson's own colour codes are kept, every
 * other control character escaped.
 */
export function printStyled(text: string): void {
  writeLine(Deno.stdout, terminalSafeLines(text, { sgr: true }));
}

/** Writes `text` and a newline to stderr, control characters escaped. */
export function printError(text: string): void {
  writeLine(Deno.stderr, terminalSafeLines(text));
}

function writeLine(target: { writeSync(p: Uint8Array): number }, text: string): void {
  writeAll(target, encoder.encode(text.endsWith("\n") ? text : text + "\n"));
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
