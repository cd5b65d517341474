/**
 * The difference between two plans of one cluster: what Keelson does under the inventory in force
 * and what it would do under a proposed one (`keelson plan --current`/`--kubeconfig`). Nodes whose
 * actions differ (initialized, tainted, deleted, or kept by a guard), pod routes whose fate
 * differs, Services whose address, pool or standing differs (stranded: an address kept that no
 * pool offers any more), and the reasons a reload of the proposed file would be refused. Pure.
 *
 * @module
 */
import type { AllocationPlan } from "../cloud/cluster_plan.ts";
import type { NodePlan, PlannedNodeAction } from "./plan_nodes.ts";
import { compareCodeUnits } from "../text/code_unit_order.ts";

/** What one inventory makes of the cluster. */
export interface ClusterPlan {
  nodes: readonly NodePlan[];
  services: AllocationPlan;
}

/** One Node's actions under each inventory (routes apart), when they differ. */
export interface NodeDiff {
  node: string;
  /** Ready condition status. */
  ready: string;
  inForce: { machineState: string | null; actions: PlannedNodeAction[] };
  proposed: { machineState: string | null; actions: PlannedNodeAction[] };
}

/** A pod CIDR's fate under one inventory. */
export type RouteState =
  | { state: "announced"; nextHop: string }
  | { state: "refused"; reason: string }
  | { state: "none" };

/** One pod CIDR whose fate differs. */
export interface RouteDiff {
  node: string;
  cidr: string;
  inForce: RouteState;
  proposed: RouteState;
}

/** A LoadBalancer Service under one inventory. */
export interface ServiceState {
  /** `served` (kept or allocated), `pending`, `other-class` (not Keelson's), `absent`. */
  state: "served" | "pending" | "other-class" | "absent";
  /** Canonical addresses it has (served), else empty. */
  ips: string[];
  /** The pool of each address (null: no pool holds it). */
  pools: (string | null)[];
  /** Addresses it keeps that no pool offers any more. */
  stranded: string[];
  /** Why it is pending. */
  reason?: string;
}

/** How a Service changes. */
export type ServiceChange =
  | "stranded"
  | "address"
  | "pending"
  | "allocated"
  | "pool"
  | "released"
  | "taken";

/** One Service whose state differs. */
export interface ServiceDiff {
  serviceKey: string;
  change: ServiceChange;
  inForce: ServiceState;
  proposed: ServiceState;
  /** Hosts whose last heartbeat report lists one of its in-force addresses (not judged fresh). */
  reportedBy: string[];
}

/** The whole difference. */
export interface PlanDiff {
  /** Why the agent would refuse to reload the proposed file (it keeps the one in force). */
  refused: string[];
  nodes: NodeDiff[];
  routes: RouteDiff[];
  services: ServiceDiff[];
}

/** Inputs beyond the two plans. */
export interface DiffContext {
  /** The reload refusals (e.g. stranded addresses), as sentences. */
  refused: readonly string[];
  /** VIP -> hosts whose last heartbeat report lists it. */
  reportedBy: ReadonlyMap<string, readonly string[]>;
}

/**
 * Compares the plans of the inventory in force and of the proposed one, for the same objects.
 * @param inForce the plan under the inventory in force
 * @param proposed the plan under the proposed inventory
 * @param context reload refusals and heartbeat reports
 * @returns what differs, sorted by name
 */
export function diffPlans(
  inForce: ClusterPlan,
  proposed: ClusterPlan,
  context: DiffContext,
): PlanDiff {
  return {
    refused: [...context.refused],
    nodes: diffNodes(inForce.nodes, proposed.nodes),
    routes: diffRoutes(inForce.nodes, proposed.nodes),
    services: diffServices(inForce.services, proposed.services, context.reportedBy),
  };
}

/**
 * Whether the proposed inventory changes anything (a refused reload counts: the operator must
 * act before it can apply).
 * @param diff from `diffPlans`
 * @returns true when there is any difference
 */
export function hasChanges(diff: PlanDiff): boolean {
  return diff.refused.length + diff.nodes.length + diff.routes.length + diff.services.length > 0;
}

const isRoute = (a: PlannedNodeAction) =>
  a.action === "announce-route" || a.action === "refuse-route";

function diffNodes(before: readonly NodePlan[], after: readonly NodePlan[]): NodeDiff[] {
  const old = new Map(before.map((p) => [p.node, p]));
  const out: NodeDiff[] = [];
  for (const plan of after) {
    const was = old.get(plan.node);
    const a = (was?.actions ?? []).filter((x) => !isRoute(x));
    const b = plan.actions.filter((x) => !isRoute(x));
    if (JSON.stringify(a) === JSON.stringify(b)) continue;
    out.push({
      node: plan.node,
      ready: plan.ready,
      inForce: { machineState: was?.machineState ?? null, actions: a },
      proposed: { machineState: plan.machineState ?? null, actions: b },
    });
  }
  return out.sort((x, y) => compareCodeUnits(x.node, y.node));
}

function routeStates(plans: readonly NodePlan[]): Map<string, RouteDiff["inForce"]> {
  const out = new Map<string, RouteState>();
  for (const plan of plans) {
    for (const a of plan.actions) {
      if (a.action === "announce-route") {
        out.set(`${plan.node}\n${a.cidr}`, { state: "announced", nextHop: a.nextHop });
      } else if (a.action === "refuse-route") {
        out.set(`${plan.node}\n${a.cidr}`, { state: "refused", reason: a.reason });
      }
    }
  }
  return out;
}

function diffRoutes(before: readonly NodePlan[], after: readonly NodePlan[]): RouteDiff[] {
  const a = routeStates(before), b = routeStates(after);
  const out: RouteDiff[] = [];
  for (const key of new Set([...a.keys(), ...b.keys()])) {
    const inForce = a.get(key) ?? { state: "none" as const };
    const proposed = b.get(key) ?? { state: "none" as const };
    if (JSON.stringify(inForce) === JSON.stringify(proposed)) continue;
    const [node, cidr] = key.split("\n") as [string, string];
    out.push({ node, cidr, inForce, proposed });
  }
  return out.sort((x, y) => compareCodeUnits(x.node, y.node) || compareCodeUnits(x.cidr, y.cidr));
}

function serviceStates(plan: AllocationPlan): Map<string, ServiceState> {
  const out = new Map<string, ServiceState>();
  for (const s of plan.services) {
    out.set(
      s.serviceKey,
      s.outcome === "pending"
        ? {
          state: "pending",
          ips: [],
          pools: [],
          stranded: [],
          ...(s.reason ? { reason: s.reason } : {}),
        }
        : { state: "served", ips: [...s.ips], pools: s.pools.map((p) => p ?? null), stranded: [] },
    );
  }
  for (const s of plan.otherClass) {
    out.set(s.serviceKey, { state: "other-class", ips: [], pools: [], stranded: [] });
  }
  for (const o of plan.orphans) out.get(o.serviceKey)?.stranded.push(o.ip);
  return out;
}

const ABSENT: ServiceState = { state: "absent", ips: [], pools: [], stranded: [] };

function diffServices(
  before: AllocationPlan,
  after: AllocationPlan,
  reportedBy: ReadonlyMap<string, readonly string[]>,
): ServiceDiff[] {
  const a = serviceStates(before), b = serviceStates(after);
  const out: ServiceDiff[] = [];
  for (const key of new Set([...a.keys(), ...b.keys()])) {
    const inForce = a.get(key) ?? ABSENT, proposed = b.get(key) ?? ABSENT;
    const change = classify(inForce, proposed);
    if (!change) continue;
    const hosts = new Set(inForce.ips.flatMap((ip) => reportedBy.get(ip) ?? []));
    out.push({ serviceKey: key, change, inForce, proposed, reportedBy: [...hosts].sort() });
  }
  return out.sort((x, y) => compareCodeUnits(x.serviceKey, y.serviceKey));
}

/** The most important way a Service changes, or undefined when it does not. */
function classify(inForce: ServiceState, proposed: ServiceState): ServiceChange | undefined {
  const same = (x: readonly unknown[], y: readonly unknown[]) =>
    JSON.stringify(x) === JSON.stringify(y);
  if (proposed.stranded.some((ip) => !inForce.stranded.includes(ip))) return "stranded";
  const served = (s: ServiceState) => s.state === "served";
  if (served(inForce) && served(proposed)) {
    if (!same(inForce.ips, proposed.ips)) return "address";
    if (!same(inForce.pools, proposed.pools)) return "pool";
    return same(inForce.stranded, proposed.stranded) ? undefined : "pool";
  }
  if (served(inForce) && proposed.state === "pending") return "pending";
  if (!served(inForce) && served(proposed)) {
    return inForce.state === "other-class" ? "taken" : "allocated";
  }
  if (proposed.state === "other-class" && inForce.state !== "other-class") return "released";
  // pending stays pending (perhaps for another reason), absent stays absent: nothing is written
  return undefined;
}
