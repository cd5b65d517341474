/**
 * `keelson plan`'s view of the pools' serving hosts: under the proposed inventory (with the
 * snapshot's or the live cluster's Nodes for readiness), and, when an inventory is in force, which
 * pools would move to other hosts. Pure.
 *
 * @module
 */
import {
  describeHosts,
  type PoolServers,
  poolServersOf,
  type ServingHost,
  type ServingInventory,
  servingNow,
  unservedPoolProblems,
} from "../status/pool_servers.ts";

/** One pool's serving hosts under each inventory. */
export interface PoolServingPlan {
  pool: string;
  announce: "vrrp" | "bgp";
  /** The hosts that serve it now under the inventory in force; null when none is in force or it has no such pool. */
  inForce: string[] | null;
  /** The hosts that would serve it now under the proposed inventory. */
  proposed: string[];
  /** Every machine the proposed selection matches, with why it can or cannot serve. */
  hosts: ServingHost[];
  /** Whether the hosts that serve it differ between the two inventories. */
  changed: boolean;
}

/** The plan's serving hosts. */
export interface PlanServing {
  pools: PoolServingPlan[];
  /** A pool of the proposed inventory no host could serve. */
  problems: string[];
}

/**
 * Each pool's serving hosts under the proposed inventory, against the one in force.
 * @param proposed the proposed inventory
 * @param current the inventory in force; undefined when none is (a plan of one file, or a first
 *   start with `--current none`)
 * @param nodes the Nodes read (untrusted)
 * @returns the pools in the proposed inventory's order
 */
export function planServing(
  proposed: ServingInventory,
  current: ServingInventory | undefined,
  nodes: readonly unknown[],
): PlanServing {
  const next = poolServersOf(proposed, nodes);
  const before = new Map(
    (current ? poolServersOf(current, nodes) : []).map((p) => [p.pool, servingNow(p)]),
  );
  return {
    pools: next.map((p): PoolServingPlan => {
      const inForce = before.get(p.pool) ?? null;
      const now = servingNow(p);
      return {
        pool: p.pool,
        announce: p.announce,
        inForce,
        proposed: now,
        hosts: p.hosts,
        changed: current !== undefined && (inForce === null || inForce.join() !== now.join()),
      };
    }),
    problems: unservedPoolProblems(next),
  };
}

/**
 * The serving-hosts section of a plan of one inventory.
 * @param plan from `planServing`
 * @returns the lines (not yet made terminal-safe), headed
 */
export function formatServing(plan: PlanServing): string[] {
  return [
    `Serving hosts (${plan.pools.length} pool${plan.pools.length === 1 ? "" : "s"}):`,
    ...plan.pools.map((p) => `  ${p.pool} (${kind(p)}): ${describeHosts(p.hosts)}`),
    ...plan.problems.map((problem) => `  problem: ${problem}`),
  ];
}

/**
 * The lines a plan of two inventories adds: the pools that would move, and pools nothing could
 * serve under the proposed one.
 * @param plan from `planServing`
 * @returns the lines (not yet made terminal-safe); none when nothing moves
 */
export function formatServingChanges(plan: PlanServing): string[] {
  const moved = plan.pools.filter((p) => p.changed);
  if (moved.length === 0 && plan.problems.length === 0) return [];
  return [
    "",
    `Serving hosts that would change (${moved.length}):`,
    ...moved.map((p) =>
      `  ${p.pool} (${kind(p)}): ${p.inForce === null ? "(new pool)" : list(p.inForce)} -> ${
        list(p.proposed)
      }`
    ),
    ...plan.problems.map((problem) => `  problem: ${problem}`),
  ];
}

/**
 * Whether a pool would be served by other hosts (a change `plan` reports with exit 2).
 * @param plan from `planServing`
 */
export function servingChanges(plan: PlanServing): boolean {
  return plan.pools.some((p) => p.changed);
}

function kind(pool: Pick<PoolServers, "announce">): string {
  return pool.announce === "bgp" ? "BGP" : "VRRP";
}

function list(hosts: readonly string[]): string {
  return hosts.length === 0 ? "none" : hosts.join(", ");
}
