/**
 * Heartbeats of retired hosts: a machine removed from the inventory (or marked
 * `state = "retired"`) stops renewing its heartbeat Lease, and the Lease stays unless the garbage
 * collector deletes it with the host's Node (`src/agent/host_heartbeat.ts`) — which it cannot for
 * a host that was never a Node, or whose Node was deleted before the Lease named it as owner.
 * Such a heartbeat is "retired", not "silent": no alert, no Warning, no split-brain or missing
 * count; `keelson status` lists it apart with the command that deletes it.
 *
 * Only a silent heartbeat is retired: a host still renewing is still running (and may still hold
 * VIPs), whatever the inventory says, so it keeps counting until it stops.
 *
 * @module
 */
import type { Heartbeat } from "./heartbeats.ts";
import { isSilent } from "./heartbeats.ts";
import { HEARTBEAT_LEASE_PREFIX, HEARTBEAT_NAMESPACE } from "./host_report.ts";

/**
 * The hosts the inventory still has: every machine not marked retired.
 * @param machines the inventory's machines
 * @returns their names
 */
export function inventoryHosts(
  machines: readonly { name: string; state?: string }[],
): Set<string> {
  return new Set(machines.filter((m) => m.state !== "retired").map((m) => m.name));
}

/**
 * Whether a heartbeat is of a retired host: silent (this reader saw it unchanged for longer than
 * its duration), and its host not in the inventory.
 * @param heartbeat the judged heartbeat
 * @param inventory `inventoryHosts` of the inventory in force; undefined when it is not known
 *   (then nothing is retired: a silent host stays silent)
 * @returns true when retired
 */
export function isRetired(
  heartbeat: Heartbeat,
  inventory: ReadonlySet<string> | undefined,
): boolean {
  return inventory !== undefined && !inventory.has(heartbeat.host) && isSilent(heartbeat);
}

/**
 * Splits heartbeats into those that count (hosts of the inventory, and any host still renewing)
 * and those of retired hosts.
 * @param heartbeats every judged heartbeat
 * @param inventory as `isRetired`
 * @returns both lists, in the input's order
 */
export function splitRetired(
  heartbeats: readonly Heartbeat[],
  inventory: ReadonlySet<string> | undefined,
): { current: Heartbeat[]; retired: Heartbeat[] } {
  const current: Heartbeat[] = [];
  const retired: Heartbeat[] = [];
  for (const h of heartbeats) (isRetired(h, inventory) ? retired : current).push(h);
  return { current, retired };
}

/**
 * The command that deletes a retired host's heartbeat by hand.
 * @param host the host's machine name (a validated name: safe to show in a shell command)
 * @returns the kubectl command line
 */
export function heartbeatCleanupCommand(host: string): string {
  return `kubectl -n ${HEARTBEAT_NAMESPACE} delete lease ${HEARTBEAT_LEASE_PREFIX}${host}`;
}
