/**
 * What the root step serves the agent besides installing its files: BIRD's read-only socket
 * (`bird/read_only_relay.ts`), once an inventory runs BIRD on this host. Started once per socket
 * path for the life of the process (`[bgp] socket` and `track_file_dir` are read only at start):
 * a reload that removes `[bgp]` keeps it, as the agent keeps reading the sessions BIRD still has.
 *
 * @module
 */
import type { Config } from "../../../src/config/types.ts";
import { daemonPaths } from "../../../src/config/daemon_dir.ts";
import { runsBird } from "../../../src/config/restart_settings.ts";
import { serveReadOnlyBird } from "../bird/read_only_relay.ts";

/** The relays this process serves, by socket path. */
const serving = new Map<string, Promise<void>>();

/**
 * Starts BIRD's read-only socket for this host when the inventory runs BIRD here and it is not
 * served yet.
 * @param config the inventory just read
 * @param host this machine's name
 * @param signal stops every relay
 * @returns the relays this process serves (each ends once `signal` aborts)
 */
export function serveHostReaders(
  config: Config,
  host: string,
  signal: AbortSignal,
): Promise<void>[] {
  if (config.bgp && runsBird(config, host) && !signal.aborted) {
    const listenPath = daemonPaths(config).birdReadSocket;
    if (!serving.has(listenPath)) {
      serving.set(
        listenPath,
        serveReadOnlyBird({ listenPath, birdSocket: config.bgp.socket, signal }).finally(() =>
          serving.delete(listenPath)
        ),
      );
    }
  }
  return [...serving.values()];
}
