/**
 * Turning `node:util` parseArgs failures into one-line usage errors.
 *
 * @module
 */
import { parseArgs, type ParseArgsConfig } from "node:util";
import { errorMessage } from "../log/error_message.ts";

/** A command-line mistake; the CLI prints its message and exits 2. */
export class UsageError extends Error {
  /** @param message what is wrong and how to fix it */
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/**
 * `parseArgs` in strict mode, with its errors as `UsageError`.
 * @param args the arguments after the subcommand
 * @param options the parseArgs option table
 * @throws {UsageError} on an unknown flag or a missing value
 */
export function parseFlags<T extends NonNullable<ParseArgsConfig["options"]>>(
  args: string[],
  options: T,
): ReturnType<
  typeof parseArgs<{ args: string[]; options: T; strict: true; allowPositionals: true }>
> {
  try {
    return parseArgs({ args, options, strict: true, allowPositionals: true });
  } catch (error) {
    throw new UsageError(errorMessage(error));
  }
}
