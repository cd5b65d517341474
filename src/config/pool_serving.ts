/**
 * Which machines serve a pool: hold its addresses over VRRP or announce them over BGP. One rule,
 * used by `check`, `render`, `plan`, `status` and the host side alike.
 *
 * @module
 */
import type { Config, Machine, Pool } from "./types.ts";

/** The selection a pool without `[pools.served_by]` has: the control-plane machines. */
export const DEFAULT_SERVED_BY: Readonly<NonNullable<Pool["served_by"]>> = Object.freeze({
  roles: ["control-plane"] as ("control-plane" | "worker")[],
});

/**
 * Whether a machine matches a pool's `served_by` selection, whatever its state. Every key given
 * must match; a key left out matches every machine.
 * @param machine an inventory machine
 * @param pool the pool
 */
export function matchesServedBy(
  machine: Pick<Machine, "name" | "role" | "labels">,
  pool: Pick<Pool, "served_by">,
): boolean {
  const servedBy = pool.served_by ?? DEFAULT_SERVED_BY;
  if (servedBy.machines !== undefined && !servedBy.machines.includes(machine.name)) return false;
  if (servedBy.roles !== undefined && !servedBy.roles.includes(machine.role)) return false;
  for (const [key, value] of Object.entries(servedBy.labels ?? {})) {
    if (!Object.hasOwn(machine.labels, key) || machine.labels[key] !== value) return false;
  }
  return true;
}

/**
 * Whether a machine serves a pool: it matches the selection and is not retired (a retired
 * machine serves nothing; maintenance and NotReady are judged where Node state is known).
 * @param machine an inventory machine
 * @param pool the pool
 */
export function servesPool(machine: Machine, pool: Pool): boolean {
  return machine.state !== "retired" && matchesServedBy(machine, pool);
}

/**
 * The machines that serve a pool, in inventory order.
 * @param config the validated inventory
 * @param pool one of its pools
 */
export function poolServers(config: Pick<Config, "machines">, pool: Pool): Machine[] {
  return config.machines.filter((m) => servesPool(m, pool));
}

/**
 * The pools a machine serves, in inventory order; none for a machine the inventory lacks.
 * @param config the validated inventory
 * @param host the machine's name
 */
export function poolsServedBy(config: Pick<Config, "machines" | "pools">, host: string): Pool[] {
  const machine = config.machines.find((m) => m.name === host);
  if (machine === undefined) return [];
  return config.pools.filter((p) => servesPool(machine, p));
}

/**
 * Whether a machine serves any pool or the control-plane VIP: the hosts that run an announcer.
 * @param config the validated inventory
 * @param host the machine's name
 */
export function isServingHost(config: Pick<Config, "machines" | "pools">, host: string): boolean {
  const machine = config.machines.find((m) => m.name === host);
  return machine !== undefined && runsAnnouncer(machine, config.pools);
}

/**
 * The machines that serve any pool or the control-plane VIP (`isServingHost`), in inventory
 * order: the hosts whose heartbeats are expected.
 * @param config the validated inventory
 */
export function servingHostNames(config: Pick<Config, "machines" | "pools">): string[] {
  return config.machines.filter((m) => runsAnnouncer(m, config.pools)).map((m) => m.name);
}

/** `isServingHost` of one machine, without looking it up. */
function runsAnnouncer(machine: Machine, pools: readonly Pool[]): boolean {
  if (machine.state === "retired") return false;
  return machine.role === "control-plane" || pools.some((p) => servesPool(machine, p));
}

/** What of the inventory decides which hosts serve a pool and whether it is announced. */
export type ServingInputs = Pick<Config, "machines" | "pools" | "keepalived" | "bgp">;

/**
 * Whether Keelson announces a pool at all: its announcer is configured (`[keepalived]` enabled
 * for VRRP pools, a `[bgp]` table for BGP pools).
 * @param config the validated inventory
 * @param pool one of its pools
 */
export function isPoolAnnounced(config: Pick<Config, "keepalived" | "bgp">, pool: Pool): boolean {
  return pool.announce === "bgp" ? config.bgp !== undefined : config.keepalived.enabled;
}
