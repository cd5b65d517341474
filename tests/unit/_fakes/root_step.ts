/**
 * The root step (`keelson apply-host-config --watch`) for unit tests that start the agent's host
 * side in-process: it applies what the agent staged every 10 ms, with the inventory the agent has,
 * and serves BIRD's read-only socket in `<track_file_dir>-daemons` (made here, the test user's,
 * where keelson.tmpfiles makes it root's), as keelson-apply.service does beside keelson.service.
 *
 * @module
 */
import type { Config } from "../../../src/config/types.ts";
import { applyHostConfig } from "../../../providers/baremetal/host_apply/apply_host_config.ts";
import { currentUser } from "../../../providers/baremetal/keepalived/current_user.ts";
import { daemonPaths } from "../../../src/config/daemon_dir.ts";
import { serveReadOnlyBird } from "../../../providers/baremetal/bird/read_only_relay.ts";

/**
 * Starts the loop; dispose (or `stop`) ends it.
 * @param config the inventory, read at each round
 * @param host this machine's name
 * @returns the running root step, its read-only BIRD socket listening when the inventory has
 *   `[bgp]` at start
 */
export async function startRootStep(
  config: () => Config,
  host: string,
): Promise<AsyncDisposable & { stop(): Promise<void> }> {
  const agentUser = (await currentUser()).name ?? "root";
  const relayStop = new AbortController();
  let relay: { dir: string; served: Promise<void> } | undefined;
  const first = config();
  if (first.bgp) {
    const { dir, birdReadSocket } = daemonPaths(first);
    await Deno.mkdir(dir, { mode: 0o750 });
    let listening: () => void = () => {};
    const ready = new Promise<void>((resolve) => listening = resolve);
    const served = serveReadOnlyBird({
      listenPath: birdReadSocket,
      birdSocket: first.bgp.socket,
      signal: relayStop.signal,
      directoryOwner: Deno.uid() ?? 0,
      retryMs: 20,
      onListening: () => listening(),
    });
    relay = { dir, served };
    const timer = setTimeout(() => listening(), 5000);
    await ready;
    clearTimeout(timer);
  }
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      await applyHostConfig({ config: config(), host, agentUser });
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  })();
  const stop = async () => {
    stopped = true;
    await loop;
    relayStop.abort();
    if (relay) {
      await relay.served;
      await Deno.remove(relay.dir, { recursive: true }).catch(() => {});
    }
  };
  return { stop, [Symbol.asyncDispose]: stop };
}
