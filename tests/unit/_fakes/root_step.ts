/**
 * The root step (`keelson apply-host-config --watch`) for unit tests that start the agent's host
 * side in-process: it applies what the agent staged every 10 ms, with the inventory the agent has,
 * as keelson-apply.service does beside keelson.service.
 *
 * @module
 */
import type { Config } from "../../../src/config/types.ts";
import { applyHostConfig } from "../../../providers/baremetal/host_apply/apply_host_config.ts";
import { currentUser } from "../../../providers/baremetal/keepalived/current_user.ts";

/**
 * Starts the loop; dispose (or `stop`) ends it.
 * @param config the inventory, read at each round
 * @param host this machine's name
 * @returns the running root step
 */
export async function startRootStep(
  config: () => Config,
  host: string,
): Promise<AsyncDisposable & { stop(): Promise<void> }> {
  const agentUser = (await currentUser()).name ?? "root";
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
  };
  return { stop, [Symbol.asyncDispose]: stop };
}
