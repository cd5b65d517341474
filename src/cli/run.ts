/**
 * `keelson run`: the agent, as systemd's ExecStart runs it.
 *
 * @module
 */
import { runAgent } from "../agent/agent.ts";
import { ConfigError } from "../config/config_error.ts";
import { loadInventory } from "../config/load_config.ts";
import { validateConfig } from "../config/parse_config.ts";
import { hostIdentityProblem } from "../config/host_identity.ts";
import { flushLogging, logger, setupLogging } from "../log/logging.ts";
import { EXIT_INVALID } from "./exit_codes.ts";
import { print, printError } from "./output.ts";
import { parseRunFlags, RUN_USAGE } from "./run_flags.ts";
import { tlsFlagIssues } from "./tls_flags.ts";
import { readEnv } from "./read_env.ts";
import { UsageError } from "./usage_error.ts";
import { StopSignals } from "./stop_signals.ts";
import { hostname } from "../net/hostname.ts";
import { errorMessage } from "../log/error_message.ts";

/**
 * Runs the agent until SIGTERM or SIGINT.
 * @param args the arguments after `run`
 * @returns 0 after a clean stop, 1 for an invalid configuration
 * @throws {UsageError} for a wrong command line
 */
export async function runCommand(args: string[]): Promise<number> {
  const flags = parseRunFlags(args, readEnv);
  if (flags.help) {
    print(RUN_USAGE);
    return 0;
  }
  if (!flags.configPath) {
    throw new UsageError("--config FILE is required (or set KEELSON_CONFIG)");
  }
  let config;
  const withFlags = `${flags.configPath} with the command-line flags`;
  let inventorySha256: string;
  try {
    // the flags override the file; the result passes the same validation as the file
    const loaded = await loadInventory(flags.configPath, { namedFiles: true, apply: flags.apply });
    inventorySha256 = loaded.sha256;
    config = validateConfig(flags.apply(loaded.config), withFlags);
    // the server's certificate and key from the flags, loaded as the server will (as check does)
    const tlsIssues = await tlsFlagIssues(loaded.config.server, flags.tls, withFlags);
    if (tlsIssues.length > 0) throw new ConfigError(tlsIssues);
  } catch (error) {
    if (error instanceof ConfigError) {
      printError(error.issues.length > 0 ? error.format() : error.message);
      return EXIT_INVALID;
    }
    throw error;
  }
  const flagProblem = flags.problem(config);
  if (flagProblem) throw new UsageError(flagProblem);
  // the short name: machine names are short names in most inventories
  const host = flags.host ?? hostname("short") ?? "";
  // every host-side decision is made for the machine of this name: refuse a name it lacks
  const identity = hostIdentityProblem(
    config,
    host,
    flags.host === undefined ? "os" : "flag",
    flags.configPath,
  );
  if (identity) {
    printError(`keelson run: ${identity}`);
    return EXIT_INVALID;
  }
  await setupLogging({ level: flags.logLevel, format: flags.logFormat });
  const log = logger("agent");
  log.info("Starting keelson on host {host} with {config}", {
    host,
    config: flags.configPath,
    cluster: config.cluster.name,
    machines: config.machines.length,
    pools: config.pools.length,
    controllers: config.controllers.enabled.join(","),
    leaderElection: config.leader_election.enabled,
    listen: config.server.listen,
  });

  // Keelson trusts only the CAs its kubeconfig and inventory name, as client-go does. Deno's Node
  // TLS reads NODE_EXTRA_CA_CERTS through a permission the binary cannot be given ("sys ca" is
  // not a descriptor --allow-sys takes), so with it set every node:https request (the apiserver
  // probe) would fail with NotCapable.
  if (Deno.env.get("NODE_EXTRA_CA_CERTS") !== undefined) {
    Deno.env.delete("NODE_EXTRA_CA_CERTS");
    log.info(
      "Ignoring NODE_EXTRA_CA_CERTS: Keelson trusts the CAs its kubeconfig and inventory name",
    );
  }

  // A long-running agent must not die of one forgotten promise: log it as the bug it is and go on.
  const unhandled = (event: PromiseRejectionEvent) => {
    event.preventDefault();
    log.error("Unhandled rejection (a bug; please report it): {error}", {
      error: event.reason instanceof Error
        ? event.reason.stack ?? String(event.reason)
        : String(event.reason),
    });
  };
  globalThis.addEventListener("unhandledrejection", unhandled);
  const stopping = new StopSignals();
  const stop = (signal: Deno.Signal) => () => {
    // logged before the abort, whose listeners log what they do
    if (!stopping.stop.aborted) log.info("Received {signal}; stopping", { signal });
    else if (!stopping.hurry.aborted) {
      log.warn("Received {signal} again while stopping", { signal });
    }
    stopping.receive();
  };
  const handlers = (["SIGTERM", "SIGINT"] as const).map((s) => [s, stop(s)] as const);
  for (const [signal, handler] of handlers) Deno.addSignalListener(signal, handler);
  try {
    return await runAgent({
      configPath: flags.configPath,
      config,
      applyFlags: flags.apply,
      host,
      inventorySha256,
      signal: stopping.stop,
      hurry: stopping.hurry,
    });
  } catch (error) {
    // a runtime failure the agent did not turn into an exit code: say it, then exit 1
    log.fatal("Stopped by an unexpected error: {error}", {
      error: errorMessage(error),
    });
    return EXIT_INVALID;
  } finally {
    for (const [signal, handler] of handlers) Deno.removeSignalListener(signal, handler);
    globalThis.removeEventListener("unhandledrejection", unhandled);
    // every line logged so far (a fatal one included) reaches stderr before the process exits,
    // or as many as stderr takes within FLUSH_TIMEOUT_MS (a stderr nobody reads cannot hold it)
    await flushLogging();
  }
}
