/**
 * `keelson check`: validates the inventory, prints a summary or every problem found.
 *
 * @module
 */
import { ConfigError } from "../config/config_error.ts";
import { loadConfigFile } from "../config/load_config.ts";
import { hostIdentityProblem } from "../config/host_identity.ts";
import { summarizeConfig } from "../config/summary.ts";
import type { Config } from "../config/types.ts";
import { EXIT_INVALID, EXIT_OK } from "./exit_codes.ts";
import { print } from "./output.ts";
import { parseFlags, UsageError } from "./usage_error.ts";
import { requiredFlag } from "./read_env.ts";
import { tlsFlagIssues, withTlsFlags } from "./tls_flags.ts";
import { terminalSafe } from "../text/terminal_safe.ts";
import { toJsonText } from "../text/json_text.ts";

/** Environment variable read when `--config` is not given. */
export const CONFIG_ENV = "KEELSON_CONFIG";

/** The help text of `keelson check`. */
export const CHECK_USAGE = `Usage: keelson check --config FILE [--host NAME] [--output text|json]
                     [--tls-cert-file FILE --tls-private-key-file FILE]

Validates a Keelson inventory (TOML) and prints a summary of it, or every problem found with
its file, line and key.

Flags:
  -c, --config FILE   the inventory to check (env ${CONFIG_ENV})
      --host NAME     also check that NAME (the name keelson run uses on a host) is a
                      machine of the inventory
  -o, --output FORMAT text (default) or json: {"ok", "file", "issues": [{"file", "line",
                      "path", "message"}]}
      --tls-cert-file FILE, --tls-private-key-file FILE
                      the files keelson run is given in place of [server] tls_cert_file and
                      tls_key_file: checked as the server loads them
  -h, --help          print this help

Exit codes: 0 valid, 1 invalid or unreadable file, 2 wrong command line.`;

/** The flag table of `keelson check` (node:util parseArgs). */
export const CHECK_FLAGS = {
  config: { type: "string", short: "c" },
  host: { type: "string" },
  output: { type: "string", short: "o", default: "text" },
  "tls-cert-file": { type: "string" },
  "tls-private-key-file": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/**
 * Runs `keelson check`.
 * @param args the arguments after `check`
 * @returns 0 when the file is valid, 1 when it is not (every issue printed to stdout)
 * @throws {UsageError} on a wrong command line or when no file is named (exit 2)
 * @example
 * ```ts
 * const code = await checkCommand(["--config", "deploy/examples/keelson.toml"]);
 * ```
 */
export async function checkCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags(args, CHECK_FLAGS);
  if (values.help) {
    print(CHECK_USAGE);
    return EXIT_OK;
  }
  if (positionals.length > 0) {
    throw new UsageError(`unexpected argument "${positionals[0]}"; name the file with --config`);
  }
  if (values.output !== "text" && values.output !== "json") {
    throw new UsageError(`--output "${values.output}" is not allowed; use text or json`);
  }
  const json = values.output === "json";
  const path = requiredFlag(values.config, "--config FILE", CONFIG_ENV);
  let outcome: Config | ConfigError;
  try {
    // the files the agent will read are read now too: a FIFO or /dev/zero is refused here
    outcome = await loadConfigFile(path, {
      namedFiles: true,
      apply: (config) => withTlsFlags(config, values),
    });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    outcome = error;
  }
  // the server's pair as run makes it from the flags and the inventory (when the inventory
  // itself does not validate, only a pair both flags name)
  const bothFlags = values["tls-cert-file"] !== undefined &&
    values["tls-private-key-file"] !== undefined;
  const flagIssues = outcome instanceof ConfigError && !bothFlags ? [] : await tlsFlagIssues(
    outcome instanceof ConfigError ? {} : outcome.server,
    values,
    `${path} with the command-line flags`,
  );
  if (flagIssues.length > 0) {
    outcome = new ConfigError([
      ...(outcome instanceof ConfigError ? outcome.issues : []),
      ...flagIssues,
    ]);
  }
  if (values.host !== undefined && !(outcome instanceof ConfigError)) {
    const problem = hostIdentityProblem(outcome, values.host, "flag", path);
    if (problem) outcome = new ConfigError([{ file: path, path: "--host", message: problem }]);
  }
  if (json) {
    print(toJsonText(checkJson(path, outcome)).trimEnd());
    return outcome instanceof ConfigError ? EXIT_INVALID : EXIT_OK;
  }
  print(checkReport(path, outcome));
  return outcome instanceof ConfigError ? EXIT_INVALID : EXIT_OK;
}

/**
 * What `keelson check` prints: the summary of a valid file, or one line per problem. Names,
 * zones and quoted values come from the file: each line stays one line and shows any control
 * character as an escape.
 * @param path the file as named
 * @param outcome the validated configuration, or why it is not one
 * @returns the text
 */
export function checkReport(path: string, outcome: Config | ConfigError): string {
  if (!(outcome instanceof ConfigError)) {
    return `${terminalSafe(path)}: OK\n${terminalSafe(summarizeConfig(outcome))}`;
  }
  const n = outcome.issues.length;
  return `${outcome.format()}\n${terminalSafe(path)}: ${n} problem${n === 1 ? "" : "s"} found`;
}

/**
 * What `keelson check -o json` prints: `ok`, the file, and every problem with its line (null
 * where none is known). A file that cannot be read at all has its message as the one problem.
 * @param path the file as named
 * @param outcome the validated configuration, or why it is not one
 * @returns the document
 */
export function checkJson(
  path: string,
  outcome: Config | ConfigError,
): {
  ok: boolean;
  file: string;
  issues: { file: string; line: number | null; path: string; message: string }[];
} {
  if (!(outcome instanceof ConfigError)) return { ok: true, file: path, issues: [] };
  const issues = outcome.issues.length > 0
    ? outcome.issues
    : [{ file: path, path: "", message: outcome.message, line: undefined }];
  return {
    ok: false,
    file: path,
    issues: issues.map((i) => ({
      file: i.file,
      line: i.line ?? null,
      path: i.path,
      message: i.message,
    })),
  };
}
