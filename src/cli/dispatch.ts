/**
 * The top of the command line: picks the subcommand and maps failures to exit codes.
 *
 * @module
 */
import { EXIT_INVALID, EXIT_USAGE } from "./exit_codes.ts";
import { print, printError, StdoutClosedError } from "./output.ts";
import { UsageError } from "./usage_error.ts";
import { errorMessage } from "../log/error_message.ts";
import { closestName } from "../text/closest_name.ts";

/** Exit code after stdout was closed by its reader: the command did what it was asked. */
const EXIT_OK_QUIET = 0;

/** A subcommand: gets the arguments after its name, returns the exit code. */
export type Command = (args: string[]) => Promise<number>;

const COMMANDS: Record<string, { summary: string; load: () => Promise<Command> }> = {
  run: {
    summary: "run the agent (systemd ExecStart)",
    load: async () => (await import("./run.ts")).runCommand,
  },
  check: {
    summary: "validate the inventory; exit 1 with every problem",
    load: async () => (await import("./check.ts")).checkCommand,
  },
  plan: {
    summary: "what run would do to a snapshot, or what an inventory edit would change (live)",
    load: async () => (await import("./plan.ts")).planCommand,
  },
  import: {
    summary: "write an inventory from MetalLB's or kube-vip's configuration",
    load: async () => (await import("./import.ts")).importCommand,
  },
  render: {
    summary: "offline: print the keepalived or BIRD config a host would run",
    load: async () => (await import("./render.ts")).renderCommand,
  },
  status: {
    summary: "where every VIP is served now, hosts' heartbeats, leader, pools",
    load: async () => (await import("./status.ts")).statusCommand,
  },
  "apply-host-config": {
    summary: "as root: install the keepalived/BIRD files the agent staged, if Keelson's own",
    load: async () => (await import("./apply_host_config.ts")).applyHostConfigCommand,
  },
  version: {
    summary: "print the version",
    load: async () => (await import("./version.ts")).versionCommand,
  },
};

/** The subcommands' names, as `keelson <name>` takes them. */
export const COMMAND_NAMES: readonly string[] = Object.keys(COMMANDS);

/** The top-level help text. */
export function usage(): string {
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(19)}${c.summary}`);
  return [
    "Usage: keelson <command> [flags]",
    "",
    "Commands:",
    ...lines,
    "",
    'Run "keelson <command> --help" for the flags of a command.',
  ].join("\n");
}

/**
 * What `keelson <name>` says for a command that does not exist.
 * @param name what was typed
 * @returns e.g. `keelson: unknown command "chek"; did you mean "check"?`
 */
export function unknownCommand(name: string): string {
  const suggestion = closestName(name, COMMAND_NAMES);
  const hint = suggestion === undefined ? "" : `; did you mean "${suggestion}"?`;
  return `keelson: unknown command "${name}"${hint}`;
}

/**
 * Runs the command line.
 * @param args `Deno.args`
 * @returns the exit code
 */
export async function dispatch(args: string[]): Promise<number> {
  const [name, ...rest] = args;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    print(usage());
    return name === undefined ? EXIT_USAGE : 0;
  }
  if (name === "--version") return (await COMMANDS.version!.load())([]);
  const command = COMMANDS[name];
  if (!command) {
    printError(`${unknownCommand(name)}\n\n${usage()}`);
    return EXIT_USAGE;
  }
  try {
    return await (await command.load())(rest);
  } catch (error) {
    if (error instanceof UsageError) {
      printError(`keelson ${name}: ${error.message}\nRun "keelson ${name} --help" for usage.`);
      return error.exitCode ?? EXIT_USAGE;
    }
    // the reader of stdout went away (`| head -1`): nothing left to say to anyone
    if (error instanceof StdoutClosedError) return EXIT_OK_QUIET;
    // a runtime failure: one line on stderr and exit 1, never a stack trace
    printError(`keelson ${name}: ${errorMessage(error)}`);
    return EXIT_INVALID;
  }
}
