/**
 * What `keelson run` does on a host, decided from the inventory alone: a machine that is not a
 * control-plane machine but that a pool's `served_by` selects (a worker serving pools) runs the
 * host side only: it renders and applies keepalived or BIRD for the pools it serves and reports
 * its heartbeat, but runs no controller and never campaigns for the leader Lease, so the leader's
 * decisions (allocation, which VIPs exist) stay on the control plane. Every other host (the
 * control-plane machines) runs in full: host side, campaign, and the controllers while leading.
 *
 * @module
 */
import { matchesServedBy } from "./pool_serving.ts";
import type { Config } from "./types.ts";

/** `full`: host side, campaign and controllers; `host-side`: host side and heartbeat only. */
export type AgentMode = "full" | "host-side";

/**
 * The mode of `host` under `config`; a change by a reload applies at the next start. A retired
 * machine keeps its mode (it serves nothing until active again, but stays what it was).
 * @param config the validated inventory
 * @param host this host's machine name
 */
export function agentMode(config: Pick<Config, "machines" | "pools">, host: string): AgentMode {
  const machine = config.machines.find((m) => m.name === host);
  if (!machine || machine.role === "control-plane") return "full";
  return config.pools.some((pool) => matchesServedBy(machine, pool)) ? "host-side" : "full";
}
