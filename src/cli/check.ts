/**
 * `keelson check`: validates the inventory, prints a summary or every problem found.
 *
 * @module
 */
import { ConfigError } from "../config/config_error.ts";
import { loadConfigFile } from "../config/load_config.ts";
import { summarizeConfig } from "../config/summary.ts";
import { EXIT_INVALID, EXIT_OK } from "./exit_codes.ts";
import { print } from "./output.ts";
import { parseFlags, UsageError } from "./usage_error.ts";
import { requiredFlag } from "./read_env.ts";
import { toJsonText } from "../text/json_text.ts";

/** Environment variable read when `--config` is not given. */
export const CONFIG_ENV = "KEELSON_CONFIG";

const USAGE = `Usage: keelson check --config FILE [--output text|json]

Validates a Keelson inventory (TOML) and prints a summary of it, or every problem found with
its file, line and key.

Flags:
  -c, --config FILE   the inventory to check (env ${CONFIG_ENV})
  -o, --output FORMAT text (default) or json: {"ok", "file", "issues": [{"file", "line",
                      "path", "message"}]}
  -h, --help          print this help

Exit codes: 0 valid, 1 invalid or unreadable file, 2 wrong command line.`;

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
  const { values, positionals } = parseFlags(args, {
    config: { type: "string", short: "c" },
    output: { type: "string", short: "o", default: "text" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) {
    print(USAGE);
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
  try {
    // the files the agent will read are read now too: a FIFO or /dev/zero is refused here
    const config = await loadConfigFile(path, { namedFiles: true });
    print(
      json
        ? toJsonText({ ok: true, file: path, issues: [] }).trimEnd()
        : `${path}: OK\n${summarizeConfig(config)}`,
    );
    return EXIT_OK;
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    if (json) {
      // a file that cannot be read at all has no issue list: its message is the one issue
      const issues = error.issues.length > 0
        ? error.issues
        : [{ file: path, path: "", message: error.message }];
      const shaped = issues.map((i) => ({
        file: i.file,
        line: i.line ?? null,
        path: i.path,
        message: i.message,
      }));
      print(toJsonText({ ok: false, file: path, issues: shaped }).trimEnd());
      return EXIT_INVALID;
    }
    const n = error.issues.length;
    print(`${error.format()}\n${path}: ${n} problem${n === 1 ? "" : "s"} found`);
    return EXIT_INVALID;
  }
}
