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
import { KeepalivedApplier } from "../keepalived/config_applier.ts";
import { BirdApplier } from "../bird/config_applier.ts";
import { stagedPaths } from "../../../src/config/stage_dir.ts";
import { readStaged } from "./read_staged.ts";
import { stagedKeepalivedProblem } from "./staged_keepalived.ts";
import { stagedBirdProblem } from "./staged_bird.ts";
import { renderHostBird } from "../bird/host_config.ts";
import { runsBird } from "../../../src/config/restart_settings.ts";
import { outcomeFile, sha256Hex, type StageOutcome } from "../../../src/config/stage_outcome.ts";

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

/**
 * The last inventory that ran BIRD on each host, and its passwords, kept by a long-running root
 * step (`--watch`) so that a reload removing `[bgp]` can still withdraw through BIRD's sessions.
 */
const lastBird = new Map<string, { config: Config; passwords: ReadonlyMap<string, string> }>();

/** The staging each host's daemon last had judged (inode and text), by `host daemon`. */
const handled = new Map<string, { ino: number; text: string }>();

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
      // a watch wakes for every write in the directory: a staging already handled is left alone
      const key = `${options.host} ${daemon}`;
      const seen = handled.get(key);
      if (seen?.ino === staged.ino && seen.text === staged.text) {
        outcome ??= { announcer: daemon, result: "unchanged", message: "already handled" };
        break;
      }
      const applied = await applyOne(daemon, staged.text, options);
      outcome = applied.outcome;
      if (applied.installedFile) {
        await tellAgent(applied.installedFile, staged, outcome);
      }
      handled.set(key, { ino: staged.ino, text: staged.text });
    }
    outcomes.push(outcome!);
  }
  return outcomes;
}

/**
 * Writes the outcome beside the installed file for the agent (`src/config/stage_outcome.ts`):
 * a temp file renamed over it. A failure to write it only costs the agent its wait.
 */
async function tellAgent(
  installedFile: string,
  staged: { text: string; ino: number },
  outcome: HostApplyOutcome,
): Promise<void> {
  const file = outcomeFile(installedFile);
  const temp = `${file}.${Deno.pid}.tmp`;
  const body: StageOutcome = {
    ino: staged.ino,
    sha256: await sha256Hex(staged.text),
    result: outcome.result,
    message: outcome.message,
  };
  try {
    await Deno.writeTextFile(temp, JSON.stringify(body) + "\n", { mode: 0o644 });
    await Deno.rename(temp, file);
  } catch {
    await Deno.remove(temp).catch(() => {});
  }
}

async function applyOne(
  daemon: HostDaemon,
  text: string,
  options: HostApplyOptions,
): Promise<{ outcome: HostApplyOutcome; installedFile?: string }> {
  const installedFile = daemon === "keepalived"
    ? options.config.keepalived.config_file
    : (runsBird(options.config, options.host) ? options.config : lastBird.get(options.host)?.config)
      ?.bgp?.config_file;
  const outcome = await judgeAndInstall(daemon, text, options);
  return { outcome, ...(installedFile ? { installedFile } : {}) };
}

async function judgeAndInstall(
  daemon: HostDaemon,
  text: string,
  options: HostApplyOptions,
): Promise<HostApplyOutcome> {
  const { config, host } = options;
  const timeoutMs = options.commandTimeoutMs ?? 30_000;
  const registry = new Registry();
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
      // a staging of the text in force: the agent asks for keepalived to be told (it was not)
      reloadUnchanged: true,
      registry,
    });
    const result = await applier.apply(text);
    return {
      announcer: daemon,
      result: result.result === "success" ? "installed" : result.result,
      message: result.message,
    };
  }
  let judged: { bgp: NonNullable<Config["bgp"]>; problem: string | undefined };
  if (runsBird(config, host)) {
    const secrets = await readBgpSecrets(config);
    lastBird.set(host, { config, passwords: secrets.passwords });
    judged = {
      bgp: config.bgp!,
      problem: stagedBirdProblem(text, { config, host, passwords: secrets.passwords }),
    };
  } else {
    // [bgp] removed at a reload: the agent keeps BIRD's sessions with nothing announced, rendered
    // from the last inventory that ran BIRD; only that file, announcing nothing, is accepted
    const last = lastBird.get(host);
    if (!last) {
      return {
        announcer: daemon,
        result: "refused",
        message: `BIRD file refused: the inventory runs no BIRD on host "${host}" (no [bgp], or ` +
          "not a control-plane machine), and this process saw none that did; BIRD keeps its file",
      };
    }
    const nothing = renderHostBird({
      config: last.config,
      host,
      serviceVips: [],
      nodes: [],
      announceServices: false,
      controlPlaneHealthy: false,
      passwords: last.passwords,
    });
    judged = {
      bgp: last.config.bgp!,
      problem: "error" in nothing
        ? nothing.error
        : text === nothing.text
        ? undefined
        : "the inventory no longer runs BIRD here: only the file announcing nothing is accepted",
    };
  }
  const { bgp, problem } = judged;
  if (problem) {
    return { announcer: daemon, result: "refused", message: `BIRD file refused: ${problem}` };
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
    // written but BIRD not told (not running, or refused): an error, as the agent said before
    result: result.result === "success" ? "installed" : result.result,
    message: result.message,
  };
}
