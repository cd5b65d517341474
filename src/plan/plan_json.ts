/**
 * The document `keelson plan -o json` prints, one flat object (README "Machine-readable
 * output"): `nodes`, `services`, `otherClass`, `orphans`, `pools`, `problems`; and the one
 * `keelson plan --current`/`--kubeconfig` prints: what differs between two inventories. Pure.
 *
 * @module
 */
import type { PlanInventories } from "./plan_inventories.ts";
import type { AllocationPlan } from "../cloud/cluster_plan.ts";
import type { NodePlan } from "./plan_nodes.ts";
import { jsonCount } from "../text/json_text.ts";
import { hasChanges, type PlanDiff } from "./plan_diff.ts";
import type { PlanPower } from "./plan_power.ts";

/** One pool and family in the plan's JSON, as in `keelson status -o json`. */
export interface PoolJson {
  pool: string;
  family: "IPv4" | "IPv6";
  /** A number; decimal text only above 2^53. */
  total: number | string;
  used: number;
}

/** The whole `plan -o json` document. */
export interface PlanJson {
  nodes: readonly NodePlan[];
  services: (Omit<AllocationPlan["services"][number], "pool" | "pools"> & {
    pool: string | null;
    pools: (string | null)[];
  })[];
  /** LoadBalancer Services of another `loadBalancerClass`: not Keelson's, listed, not planned. */
  otherClass: AllocationPlan["otherClass"];
  orphans: (Omit<AllocationPlan["orphans"][number], "pool"> & { pool: string | null })[];
  pools: PoolJson[];
  problems: string[];
}

/**
 * The plan as one flat document.
 * @param nodes what happens to each Node
 * @param allocations what each LoadBalancer Service gets, orphans, pool usage, pool problems
 * @returns the document (bigints already turned into counts)
 */
export function planJson(nodes: readonly NodePlan[], allocations: AllocationPlan): PlanJson {
  return {
    nodes,
    // null, not absent, where no pool holds an address: every key is always there
    services: allocations.services.map((s) => ({
      ...s,
      pool: s.pool ?? null,
      pools: s.pools.map((p) => p ?? null),
    })),
    otherClass: allocations.otherClass,
    orphans: allocations.orphans.map((o) => ({ ...o, pool: o.pool ?? null })),
    pools: allocations.stats.map((s): PoolJson => ({
      pool: s.pool,
      family: s.family === 4 ? "IPv4" : "IPv6",
      total: jsonCount(s.total),
      used: s.used,
    })),
    problems: allocations.problems,
  };
}

/** The `plan --current`/`--kubeconfig -o json` document. */
export interface PlanDiffJson extends PlanDiff {
  /** Whether anything differs (then the exit status is 2). */
  changes: boolean;
  /** The proposed inventory file. */
  proposed: string;
  /** The inventory in force. */
  current: string;
  /** Where the objects came from: the snapshot file or the kubeconfig source. */
  cluster: string;
  /** What was read: Nodes, Services, EndpointSlices, heartbeat Leases. */
  read: { nodes: number; services: number; endpointSlices: number; heartbeats: number };
  /** The machines' power the leader's heartbeat reported (`plan_power.ts`); null when none. */
  power: PlanPower | null;
  /** Which inventory file each host runs, against the plan's (`plan_inventories.ts`). */
  inventories: PlanInventories;
}

/**
 * The difference as one flat document; every key always present.
 * @param diff from `diffPlans`
 * @param inputs the files, the cluster source and what was read
 * @returns the document
 */
export function planDiffJson(
  diff: PlanDiff,
  inputs: Omit<PlanDiffJson, keyof PlanDiff | "changes">,
): PlanDiffJson {
  return { changes: hasChanges(diff), ...inputs, ...diff };
}
