/**
 * `keelson apply-host-config`: the root step (keelson-apply.service runs it with `--watch`, reacting
 * to each file the agent stages). Judges what the unprivileged agent staged
 * against Keelson's rendering from the inventory, and installs and reloads only that. Prints one
 * line per daemon; the staged text is never printed.
 *
 * @module
 */
import { NAME_REGEXP } from "../config/schema.ts";
import { offlineProvider } from "./offline_provider.ts";
import { readInventory } from "./command_inputs.ts";
import { EXIT_INVALID, EXIT_OK } from "./exit_codes.ts";
import { print, printError } from "./output.ts";
import { parseFlags, UsageError } from "./usage_error.ts";
import { requiredFlag } from "./read_env.ts";
import { terminalSafe } from "../text/terminal_safe.ts";
import { setupLogging } from "../log/logging.ts";
import { hostname } from "../net/hostname.ts";
import { watchStaged } from "./watch_staged.ts";
import { renderCommands } from "./render.ts";

/** `keelson apply-host-config --help`. */
export const APPLY_HOST_CONFIG_USAGE =
  `Usage: keelson apply-host-config --config FILE [--host NAME] [--agent-user USER] [--only DAEMON]
                                 [--watch]

Run as root, by keelson-apply.service (with --watch). Reads the keepalived and BIRD files the agent staged in
<track_file_dir>/stage/, and installs each one only when it is exactly what Keelson renders for
host NAME from the inventory (any script, include, protocol, filter or route Keelson does not
render is refused): then the daemon's own check runs (keepalived -t, bird -p), the file is
renamed into [keepalived] config_file or [bgp] config_file, and the daemon reloads (SIGHUP to the
pid in pid_file, or reload_command; configure on BIRD's socket). A refused file changes nothing.

Flags:
  -c, --config FILE     the inventory (env KEELSON_CONFIG)
      --host NAME       this machine's name in the inventory (env KEELSON_HOST; default: the
                        short hostname, as keelson run)
      --agent-user USER the user keelson run runs as, owner of keepalived's notify FIFO
                        (default keelson)
      --only DAEMON     keepalived or bird (default both)
      --watch           keep running: apply again after every change in the staging
                        directory (keelson-apply.service), until SIGTERM
  -h, --help            print this help

Exit codes: 0 every staged file installed or already in force (or nothing staged), 1 a file
refused or not installed, or an invalid inventory, 2 wrong command line.`;

/** The flags `keelson apply-host-config` parses. */
export const APPLY_HOST_CONFIG_FLAGS = {
  config: { type: "string", short: "c" },
  host: { type: "string" },
  "agent-user": { type: "string", default: "keelson" },
  only: { type: "string" },
  watch: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

/**
 * Runs `keelson apply-host-config`.
 * @param args the arguments after `apply-host-config`
 * @returns 0 when nothing was refused or failed, 1 otherwise
 * @throws {UsageError} on a wrong command line (exit 2)
 */
export async function applyHostConfigCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags(args, APPLY_HOST_CONFIG_FLAGS);
  if (values.help) {
    print(APPLY_HOST_CONFIG_USAGE);
    return EXIT_OK;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
  const configPath = requiredFlag(values.config, "--config FILE", "KEELSON_CONFIG");
  // the name `keelson run` gives itself without --host
  const host = values.host ?? Deno.env.get("KEELSON_HOST") ?? hostname("short") ?? "";
  if (!NAME_REGEXP.test(host)) {
    throw new UsageError(`--host "${terminalSafe(host)}" is not a machine name`);
  }
  const agentUser = values["agent-user"]!;
  // POSIX portable user names, as keepalived's notify FIFO owner is rendered
  if (!/^[a-z_][a-z0-9_-]{0,31}$/.test(agentUser)) {
    throw new UsageError(`--agent-user "${terminalSafe(agentUser)}" is not a user name`);
  }
  const only = values.only;
  // the announcers whose files the built-in providers stage
  const daemons = renderCommands().map((c) => c.announcer);
  if (only !== undefined && !daemons.includes(only)) {
    throw new UsageError(
      `--only "${terminalSafe(only)}" is not allowed; use ${daemons.join(" or ")}`,
    );
  }
  await setupLogging({ level: "warning", format: "text" });
  if (values.watch) {
    return await watchStaged({
      configPath,
      host,
      agentUser,
      ...(only ? { announcers: [only] } : {}),
    });
  }
  const config = await readInventory(configPath);
  if (!config) return EXIT_INVALID;
  const provider = offlineProvider(config);
  if (!provider) return EXIT_INVALID;
  if (!provider.applyStagedHostFiles) {
    printError(`Provider "${provider.providerName}" has no host files to install`);
    return EXIT_INVALID;
  }
  const outcomes = await provider.applyStagedHostFiles({
    host,
    agentUser,
    ...(only ? { announcers: [only] } : {}),
  });
  for (const o of outcomes) print(terminalSafe(`${o.announcer}: ${o.result}: ${o.message}`));
  const failed = outcomes.some((o) =>
    o.result === "refused" || o.result === "invalid" || o.result === "error"
  );
  return failed ? EXIT_INVALID : EXIT_OK;
}
