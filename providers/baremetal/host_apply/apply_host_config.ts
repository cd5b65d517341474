/**
 * The root step between the unprivileged agent and the daemons: reads what the agent staged
 * (`src/config/stage_dir.ts`), judges it against what Keelson renders for this host from the inventory
 * (`staged_keepalived.ts`, `staged_bird.ts`), and only then runs the daemon's own check, installs
 * it atomically where the daemon reads it (`checked_install.ts`) and reloads the daemon (SIGHUP
 * to keepalived, `configure` on BIRD's control socket) through the appliers the agent used
 * before. A refused file changes nothing: the daemons keep the configuration in force.
 *
 * It runs once per change (keelson-apply.path starts keelson-apply.service); a file staged again
 * while it runs is picked up before it exits, as a path unit does not start a unit that is still
 * running.
 *
 * @module
 */
import { Registry } from "prom-client";
import type { Config } from "../../../src/config/types.ts";
import type { StagedApplyOutcome } from "../../../src/cloud/host_file.ts";
import { readBgpSecrets } from "../../../src/config/bgp_secrets.ts";
import { readInputFile, RENDERED_FILE } from "../../../src/config/read_input_file.ts";
import { KeepalivedApplier } from "../keepalived/config_applier.ts";
import { BirdApplier } from "../bird/config_applier.ts";
import { stagedPaths } from "../../../src/config/stage_dir.ts";
import { readStaged } from "./read_staged.ts";
import { stagedKeepalivedProblem } from "./staged_keepalived.ts";
import { stagedBirdProblem } from "./staged_bird.ts";

/** The daemons the root step serves. */
export type HostDaemon = "keepalived" | "bird";

/** What the root step did for one daemon (`announcer`: the daemon). */
export type HostApplyOutcome = StagedApplyOutcome;

/** Inputs of one run of the root step. */
export interface HostApplyOptions {
  /** The inventory, as root reads it. */
  config: Config;
  /** This machine's name. */
  host: string;
  /** The user the agent runs as: the only owner of keepalived's notify FIFO. */
  agentUser: string;
  /** The daemons to serve. @default both */
  daemons?: readonly HostDaemon[];
  /** Longest a check, reload or socket command may take. @default 30000 */
  commandTimeoutMs?: number;
}

/** Rounds of re-reading a file staged again during a run, before leaving it to the next run. */
const MAX_ROUNDS = 5;

/**
 * Judges, installs and reloads what is staged, for each daemon.
 * @param options inventory, host, agent user and daemons
 * @returns one outcome per daemon
 */
export async function applyHostConfig(options: HostApplyOptions): Promise<HostApplyOutcome[]> {
  const daemons = options.daemons ?? ["keepalived", "bird"];
  const outcomes: HostApplyOutcome[] = [];
  for (const daemon of daemons) {
    let outcome: HostApplyOutcome | undefined;
    let judged: string | undefined;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const staged = await readStaged(stagedPaths(options.config)[daemon]);
      if ("missing" in staged) {
        outcome ??= { announcer: daemon, result: "nothing-staged", message: "nothing staged" };
        break;
      }
      if ("error" in staged) {
        outcome = { announcer: daemon, result: "refused", message: staged.error };
        break;
      }
      if (staged.text === judged) break;
      judged = staged.text;
      outcome = await applyOne(daemon, staged.text, options);
    }
    outcomes.push(outcome!);
  }
  return outcomes;
}

async function applyOne(
  daemon: HostDaemon,
  text: string,
  options: HostApplyOptions,
): Promise<HostApplyOutcome> {
  const { config, host } = options;
  const timeoutMs = options.commandTimeoutMs ?? 30_000;
  const registry = new Registry();
  // judged and installed before (a watch wakes for every staged write): nothing to do
  const installed = daemon === "keepalived"
    ? config.keepalived.config_file
    : config.bgp?.config_file;
  if (installed && await readInputFile(installed, RENDERED_FILE).catch(() => undefined) === text) {
    return { announcer: daemon, result: "unchanged", message: `${installed} already holds it` };
  }
  if (daemon === "keepalived") {
    const problem = stagedKeepalivedProblem(text, { config, host, agentUser: options.agentUser });
    if (problem) {
      return {
        announcer: daemon,
        result: "refused",
        message: `keepalived file refused: ${problem}`,
      };
    }
    const ka = config.keepalived;
    const applier = new KeepalivedApplier({
      configFile: ka.config_file,
      checkCommand: ka.check_command,
      pidFile: ka.pid_file,
      ...(ka.reload_command ? { reloadCommand: ka.reload_command } : {}),
      debounceMs: 0,
      commandTimeoutMs: timeoutMs,
      registry,
    });
    const result = await applier.apply(text);
    return {
      announcer: daemon,
      result: result.result === "success" || result.result === "not_running"
        ? "installed"
        : result.result,
      message: result.message,
    };
  }
  const bgp = config.bgp;
  if (!bgp) {
    return {
      announcer: daemon,
      result: "refused",
      message: "BIRD file refused: the inventory has no [bgp]",
    };
  }
  const secrets = await readBgpSecrets(config);
  const problem = stagedBirdProblem(text, { config, host, passwords: secrets.passwords });
  if (problem) {
    return { announcer: daemon, result: "refused", message: `BIRD file refused: ${problem}` };
  }
  // a fresh applier would send `configure` for a file already in force (a full parse by BIRD)
  const current = await readInputFile(bgp.config_file, RENDERED_FILE).catch(() => undefined);
  if (current === text) {
    return {
      announcer: daemon,
      result: "unchanged",
      message: `${bgp.config_file} already holds it`,
    };
  }
  const applier = new BirdApplier({
    configFile: bgp.config_file,
    socket: bgp.socket,
    checkCommand: bgp.check_command,
    commandTimeoutMs: timeoutMs,
    registry,
  });
  const result = await applier.apply(text);
  return {
    announcer: daemon,
    // a file written while BIRD is down is read by BIRD when it starts
    result: result.result === "success" || /BIRD not told/.test(result.message)
      ? "installed"
      : result.result,
    message: result.message,
  };
}
