/**
 * The one error a configuration file can produce: every problem found, each with its file, line
 * and key path, so `keelson check` and a rejected reload can list them all at once.
 *
 * @module
 */
import { terminalSafe } from "../text/terminal_safe.ts";

/** One problem in a configuration file. */
export interface ConfigIssue {
  /** The file as the caller named it, e.g. `keelson.toml` or `/etc/keelson/keelson.toml`. */
  file: string;
  /** 1-based line of the offending key or element; absent when it is not in the file. */
  line?: number;
  /** Key path such as `pools[1].addresses[0]`; empty for the whole file. */
  path: string;
  /** What is wrong, quoting the value and saying what is allowed. */
  message: string;
}

/**
 * Renders one issue as `file:line: path: message` (line and path left out when absent), on one
 * line: a control character the file put into a quoted value or key is shown as an escape
 * (`\x1b`, `\n`), so it can neither repaint the terminal nor forge another issue's line.
 * @param issue the issue
 * @returns one line of text
 * @example
 * ```ts
 * formatIssue({ file: "keelson.toml", line: 14, path: "pools[1].addresses[0]",
 *   message: '"10.0.0.300/24" is not an IP range' });
 * // keelson.toml:14: pools[1].addresses[0]: "10.0.0.300/24" is not an IP range
 * ```
 */
export function formatIssue(issue: ConfigIssue): string {
  const where = issue.line === undefined ? issue.file : `${issue.file}:${issue.line}`;
  return terminalSafe(
    issue.path === "" ? `${where}: ${issue.message}` : `${where}: ${issue.path}: ${issue.message}`,
  );
}

/**
 * A configuration that cannot be used, with every problem found in it.
 * @example
 * ```ts
 * import { parseConfig } from "./parse_config.ts";
 *
 * try {
 *   parseConfig("[cluster]\nnam = 1\n", "keelson.toml");
 * } catch (error) {
 *   if (error instanceof ConfigError) {
 *     error.format(); // keelson.toml:2: cluster.nam: unknown key; did you mean "name"?
 *   }
 * }
 * ```
 */
export class ConfigError extends Error {
  /** Every problem, in file order. */
  readonly issues: ConfigIssue[];

  /**
   * @param issues the problems found (at least one)
   * @param options the underlying error, if any
   */
  constructor(issues: ConfigIssue[], options?: { cause?: unknown }) {
    const first = issues[0];
    const count = issues.length === 1 ? "1 problem" : `${issues.length} problems`;
    super(
      first === undefined
        ? "Cannot use the configuration"
        : `Cannot use configuration file "${terminalSafe(first.file)}": ${count}\n` +
          issues.map(formatIssue).join("\n"),
      options,
    );
    this.name = "ConfigError";
    this.issues = issues;
  }

  /**
   * One line per issue, e.g.
   * `keelson.toml:14: pools[1].addresses[0]: "10.0.0.300/24" is not an IP range`.
   * @returns the lines joined by newlines
   */
  format(): string {
    return this.issues.map(formatIssue).join("\n");
  }
}
