/**
 * `keelson apply-host-config --watch`: the root step as a service. It applies what is staged at
 * start, then again each time something changes in the staging directory (inotify, coalesced
 * over `COALESCE_MS`), and every `RESCAN_MS` in case an event was lost. Each round reads the
 * inventory again, so a changed inventory judges the next file. Measured against one process per
 * change (a path unit): the process start alone costs 0.4-0.7 s on a loaded host, the watch
 * reacts within milliseconds. It also serves the agent what it may read of the daemons but not reach
 * itself (the provider's `serveHostReaders`: BIRD's read-only socket), from the first inventory
 * that asks for it until the stop signal.
 *
 * @module
 */
import type { StagedApplyOutcome } from "../cloud/host_file.ts";
import { STAGE_DIR_NAME } from "../config/stage_dir.ts";
import { readInventory } from "./command_inputs.ts";
import { offlineProvider } from "./offline_provider.ts";
import { print, printError } from "./output.ts";
import { terminalSafe } from "../text/terminal_safe.ts";
import { errorMessage } from "../log/error_message.ts";

/** Writes of one staged file (temp file, rename) arrive as several events. */
const COALESCE_MS = 20;
/** A lost inotify event (the directory made again) is made up for within this. */
const RESCAN_MS = 10_000;

/** What one watch serves. */
export interface WatchStagedOptions {
  configPath: string;
  host: string;
  agentUser: string;
  announcers?: string[];
}

/**
 * Applies what is staged now and after every change, until SIGTERM or SIGINT.
 * @param options inventory path, host, agent user and announcers
 * @returns 0 after a stop signal, 1 when the inventory cannot be read at start
 */
export async function watchStaged(options: WatchStagedOptions): Promise<number> {
  const first = await readInventory(options.configPath);
  if (!first) return 1;
  // the directory watched is fixed at start: a changed track_file_dir needs a restart
  const trackDir = first.keepalived.track_file_dir;
  const stageDir = `${trackDir}/${STAGE_DIR_NAME}`;
  let lastSaid = new Map<string, string>();
  const stopped = new AbortController();
  let readers: Promise<void>[] = [];
  const round = async () => {
    const config = await readInventory(options.configPath);
    const provider = config && offlineProvider(config);
    readers = provider?.serveHostReaders?.({
      host: options.host,
      ...(options.announcers ? { announcers: options.announcers } : {}),
      signal: stopped.signal,
    }) ?? readers;
    if (!provider?.applyStagedHostFiles) return;
    const outcomes = await provider.applyStagedHostFiles({
      host: options.host,
      agentUser: options.agentUser,
      ...(options.announcers ? { announcers: options.announcers } : {}),
    });
    lastSaid = say(outcomes, lastSaid);
  };
  let running: Promise<void> | undefined;
  let again = false;
  const trigger = () => {
    if (running) {
      again = true;
      return;
    }
    running = (async () => {
      do {
        again = false;
        await round().catch((error) => printError(terminalSafe(errorMessage(error))));
      } while (again);
      running = undefined;
    })();
  };
  trigger();
  const watcher = Deno.watchFs(trackDir, { recursive: true });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const rescan = setInterval(trigger, RESCAN_MS);
  const stop = () => watcher.close();
  Deno.addSignalListener("SIGTERM", stop);
  Deno.addSignalListener("SIGINT", stop);
  try {
    for await (const event of watcher) {
      if (!event.paths.some((p) => p === stageDir || p.startsWith(`${stageDir}/`))) continue;
      clearTimeout(timer);
      timer = setTimeout(trigger, COALESCE_MS);
    }
  } finally {
    clearTimeout(timer);
    clearInterval(rescan);
    Deno.removeSignalListener("SIGTERM", stop);
    Deno.removeSignalListener("SIGINT", stop);
    await running;
    stopped.abort();
    await Promise.all(readers);
  }
  return 0;
}

/** Prints each outcome that changed since the last round (a rescan repeats "unchanged"). */
function say(outcomes: StagedApplyOutcome[], before: Map<string, string>): Map<string, string> {
  const now = new Map<string, string>();
  for (const o of outcomes) {
    const line = `${o.announcer}: ${o.result}: ${o.message}`;
    now.set(o.announcer, line);
    const quiet = o.result === "unchanged" || o.result === "nothing-staged";
    if (!quiet || before.get(o.announcer) !== line) print(terminalSafe(line));
  }
  return now;
}
