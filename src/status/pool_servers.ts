/**
 * Each pool's serving hosts as `plan` and `status` show them: the machines its `served_by`
 * selects (`pool_serving.ts`, the one rule), each with whether it can serve now — a retired,
 * shut down or in-maintenance machine, or one whose Node is not Ready, serves nothing — and the
 * problems that follow: a pool nothing can serve, a Service's VIP held only by hosts that do not
 * serve its pool. Nodes come from the API: read defensively here. Pure.
 *
 * @module
 */
import { isPoolAnnounced, matchesServedBy, type ServingInputs } from "../config/pool_serving.ts";
import type { Config } from "../config/types.ts";
import { compareCodeUnits } from "../text/code_unit_order.ts";
import { readyCondition } from "../kube/node_ready.ts";

/** What of the inventory decides the serving hosts. */
export type ServingInventory = ServingInputs;

/** At most this many Nodes are read. */
const MAX_NODES = 10_000;

/** Why a selected machine can or cannot serve. */
export type ServingHostState =
  | "serving"
  | "node-not-ready"
  | "maintenance"
  | "shutdown"
  | "retired";

/** One machine a pool's selection names. */
export interface ServingHost {
  host: string;
  state: ServingHostState;
  /**
   * Its Node's Ready condition: `True`, `False`, `Unknown`; `absent` when the Nodes were read and
   * none has its name (not registered yet: it may serve); `unread` when no Node was read.
   */
  node: "True" | "False" | "Unknown" | "absent" | "unread";
}

/** One pool and the machines that serve it. */
export interface PoolServers {
  pool: string;
  announce: "vrrp" | "bgp";
  /** Whether the pool names its servers (`[pools.served_by]`) or has the control plane's. */
  selection: "served_by" | "default";
  /**
   * Whether Keelson announces the pool at all (`isPoolAnnounced`): only then is a pool nothing
   * serves a problem.
   */
  announced: boolean;
  /** The machines its selection matches, retired ones included, in inventory order. */
  hosts: ServingHost[];
}

/**
 * Each pool's serving hosts and whether they can serve now.
 * @param config the validated inventory
 * @param nodes the cluster's Nodes as read (untrusted), or undefined when none were read
 * @returns one entry per pool, in inventory order
 */
export function poolServersOf(
  config: ServingInventory,
  nodes: readonly unknown[] | undefined,
): PoolServers[] {
  const readiness = nodes === undefined ? undefined : nodeReadiness(nodes);
  return config.pools.map((pool) => ({
    pool: pool.name,
    announce: pool.announce,
    selection: pool.served_by === undefined ? "default" : "served_by",
    announced: isPoolAnnounced(config, pool),
    hosts: config.machines.filter((m) => matchesServedBy(m, pool)).map((m): ServingHost => {
      const node = readiness === undefined ? "unread" : readiness.get(m.name) ?? "absent";
      return { host: m.name, state: hostState(m.state, node), node };
    }),
  }));
}

function hostState(
  machineState: Config["machines"][number]["state"],
  node: ServingHost["node"],
): ServingHostState {
  if (machineState === "retired") return "retired";
  if (machineState === "shutdown") return "shutdown";
  if (machineState === "maintenance") return "maintenance";
  // a Node without a Ready condition, or not registered yet, is not held against its host
  return node === "False" || node === "Unknown" ? "node-not-ready" : "serving";
}

/** Each Node's Ready condition status, by name; Nodes without one are left out. */
function nodeReadiness(nodes: readonly unknown[]): Map<string, ServingHost["node"]> {
  const out = new Map<string, ServingHost["node"]>();
  for (const node of nodes.slice(0, MAX_NODES)) {
    if (!isRecord(node) || !isRecord(node.metadata)) continue;
    const name = node.metadata.name;
    if (typeof name !== "string" || name.length === 0 || name.length > 253) continue;
    const status = readyCondition(node);
    if (status !== undefined) out.set(name, status);
  }
  return out;
}

/**
 * The hosts of a pool that can serve it now.
 * @param pool one pool's servers
 * @returns their names, sorted
 */
export function servingNow(pool: PoolServers): string[] {
  return pool.hosts.filter((h) => h.state === "serving").map((h) => h.host).sort(
    compareCodeUnits,
  );
}

/**
 * One sentence per pool Keelson announces that nothing can serve now.
 * @param pools every pool's servers
 * @returns the problems, in pool order
 */
export function unservedPoolProblems(pools: readonly PoolServers[]): string[] {
  return pools.filter((p) => p.announced && servingNow(p).length === 0).map((p) =>
    `pool ${p.pool}: no machine can serve it (${
      p.hosts.length === 0 ? "its selection matches no machine" : describeHosts(p.hosts)
    })`
  );
}

/** What `vipServingProblems` reads of a VIP row. */
export interface VipHolders {
  vip: string;
  /** `namespace/name` of the Services holding it; empty for an address no Service holds. */
  services: readonly string[];
  /** The pool its Service names, when known. */
  pool: string | undefined;
  /** Hosts holding it (VRRP) now. */
  hosts: readonly string[];
  /** Hosts announcing it (BGP) now. */
  bgpHosts: readonly string[];
}

/**
 * One sentence per Service VIP that is held or announced only by hosts outside its pool's
 * selection (or retired): the pool's serving hosts are not serving it. A selected host in
 * maintenance or with a NotReady Node that still holds it is not counted against it here (it is
 * the pool's, and withdrawing is the host side's judgement); a VIP held by no host is `status`'s
 * own problem already.
 * @param pools every pool's servers
 * @param vips the VIP rows
 * @returns the problems, in row order
 */
export function vipServingProblems(
  pools: readonly PoolServers[],
  vips: readonly VipHolders[],
): string[] {
  const byName = new Map(pools.map((p) => [p.pool, p]));
  const problems: string[] = [];
  for (const row of vips) {
    if (row.services.length === 0 || row.pool === undefined) continue;
    const pool = byName.get(row.pool);
    if (pool === undefined) continue;
    const holders = [...new Set([...row.hosts, ...row.bgpHosts])].sort(compareCodeUnits);
    if (holders.length === 0) continue;
    const selected = new Set(pool.hosts.filter((h) => h.state !== "retired").map((h) => h.host));
    if (holders.some((h) => selected.has(h))) continue;
    const serving = servingNow(pool);
    problems.push(
      `VIP ${row.vip} (${row.services.join(", ")}) of pool ${pool.pool} is served by ${
        holders.join(", ")
      }, none of which serves the pool (${
        serving.length === 0 ? "no machine can now" : `its serving hosts: ${serving.join(", ")}`
      })`,
    );
  }
  return problems;
}

/**
 * A pool's hosts as text: `cp-1, cp-2, cp-3 (Node NotReady)`.
 * @param hosts the hosts of one pool
 * @returns the names, each not serving one with why
 */
export function describeHosts(hosts: readonly ServingHost[]): string {
  if (hosts.length === 0) return "none";
  return hosts.map((h) => h.state === "serving" ? h.host : `${h.host} (${STATE_TEXT[h.state]})`)
    .join(", ");
}

const STATE_TEXT: Record<Exclude<ServingHostState, "serving">, string> = {
  "node-not-ready": "Node not Ready",
  maintenance: "in maintenance",
  shutdown: "shut down",
  retired: "retired",
};

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
