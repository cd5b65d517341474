/**
 * `keelson version`.
 *
 * @module
 */
import { VERSION } from "../version.ts";
import { BUILD_DATE, COMMIT } from "../version_info.ts";
import { toJsonText } from "../text/json_text.ts";
import { print } from "./output.ts";
import { parseFlags, UsageError } from "./usage_error.ts";

/** The help text of `keelson version`. */
export const VERSION_USAGE = `Usage: keelson version [--output text|json]

Prints Keelson's version, the commit and date of the build ("unknown" when the build was not
stamped, e.g. run from source) and the Deno runtime it runs on.

Flags:
  -o, --output FORMAT   text (default) or json: {"version", "commit", "buildDate", "deno",
                        "target"}
  -h, --help            print this help`;

/** The flag table of `keelson version` (node:util parseArgs). */
export const VERSION_FLAGS = {
  output: { type: "string", short: "o", default: "text" },
  help: { type: "boolean", short: "h" },
} as const;

/** What `keelson version -o json` prints. */
export function versionJson(): Record<string, string> {
  return {
    version: VERSION,
    commit: COMMIT,
    buildDate: BUILD_DATE,
    deno: Deno.version.deno,
    target: Deno.build.target,
  };
}

/** Prints the version, the build's commit and date, and the runtime's. */
export function versionCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags(args, VERSION_FLAGS);
  if (values.help) {
    print(VERSION_USAGE);
    return Promise.resolve(0);
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
  if (values.output === "json") {
    print(toJsonText(versionJson()).trimEnd());
  } else if (values.output === "text") {
    print(
      `keelson ${VERSION} (commit ${COMMIT}, built ${BUILD_DATE}; deno ${Deno.version.deno}, ` +
        `${Deno.build.target})`,
    );
  } else {
    throw new UsageError(`--output "${values.output}" is not allowed; use text or json`);
  }
  return Promise.resolve(0);
}
