/**
 * Turning `node:util` parseArgs failures into one-line usage errors.
 *
 * @module
 */
import { parseArgs, type ParseArgsConfig } from "node:util";
import { errorMessage } from "../log/error_message.ts";
import { closestName } from "../text/closest_name.ts";

/** A command-line mistake; the CLI prints its message and exits 2. */
export class UsageError extends Error {
  /**
   * The exit code, when the command's own convention differs from `EXIT_USAGE` (2): `plan`'s 2
   * means "changes", so its wrong command lines exit 1, as terraform's do.
   */
  readonly exitCode: number | undefined;
  /**
   * @param message what is wrong and how to fix it
   * @param exitCode the exit code, when not `EXIT_USAGE`
   */
  constructor(message: string, exitCode?: number) {
    super(message);
    this.name = "UsageError";
    this.exitCode = exitCode;
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
    throw new UsageError(flagProblem(error, Object.keys(options)));
  }
}

/**
 * parseArgs' error as one sentence in Keelson's words (its own text spans lines and quotes
 * unevenly).
 * @param error what parseArgs threw
 * @param known the command's long flag names, for "did you mean"
 * @returns e.g. `unknown flag "--conifg"; did you mean "--config"?` or `--config needs a value:
 *   --config VALUE`
 */
function flagProblem(error: unknown, known: readonly string[]): string {
  const text = errorMessage(error);
  const code = (error as { code?: unknown } | null)?.code;
  // "Unknown option '--foo'", "Option '-c, --config <value>' argument missing"
  const flag = /'(?:-[A-Za-z], )?(--?[^' <]+)/.exec(text)?.[1] ?? "";
  if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
    const suggestion = flag.startsWith("--")
      ? closestName(flag.slice(2).replace(/=.*$/s, ""), known)
      : undefined;
    return suggestion === undefined
      ? `unknown flag "${flag}"`
      : `unknown flag "${flag}"; did you mean "--${suggestion}"?`;
  }
  if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
    if (/does not take an argument/.test(text)) return `${flag} takes no value`;
    if (/ambiguous/.test(text)) {
      return `${flag} needs a value, and the next argument is a flag; write ${flag}=VALUE`;
    }
    return `${flag} needs a value: ${flag} VALUE or ${flag}=VALUE`;
  }
  return text.split("\n")[0]!;
}
