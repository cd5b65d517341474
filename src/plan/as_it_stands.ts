/**
 * The cluster as it stands, in the shape of a plan: what is "in force" when no Keelson inventory
 * is (`keelson plan --current none`, e.g. before a migration from MetalLB or kube-vip). Nodes get
 * no action, each LoadBalancer Service keeps the addresses its status shows, routes are none; the
 * diff against the proposed inventory's plan is then exactly what Keelson would change on its
 * first start.
 *
 * @module
 */
import type { V1Service } from "@kubernetes/client-node";
import type { AllocationPlan, PlannedAllocation } from "../cloud/cluster_plan.ts";
import { objectKey } from "../kube/ports.ts";
import { canonicalIp } from "../net/ip.ts";
import type { ClusterPlan } from "./plan_diff.ts";

/**
 * The plan of "nothing in force" for the objects the proposed plan was made for.
 * @param services the snapshot's Services (their statuses are what stands)
 * @param proposed the proposed inventory's plan of the same objects
 * @returns Nodes with no action, Services with the addresses their statuses show
 */
export function asItStands(services: readonly V1Service[], proposed: ClusterPlan): ClusterPlan {
  const byKey = new Map(services.map((s) => [objectKey(s), s]));
  const standing = (planned: PlannedAllocation): PlannedAllocation => {
    const service = byKey.get(planned.serviceKey);
    const ips = (service?.status?.loadBalancer?.ingress ?? [])
      .flatMap((i) => i.ip ? [canonicalIp(i.ip) ?? i.ip] : []);
    if (ips.length === 0) {
      return {
        serviceKey: planned.serviceKey,
        outcome: "pending",
        ips: [],
        pool: undefined,
        pools: [],
      };
    }
    // the same addresses: the pools are the proposed ones (no Keelson pool is in force to differ)
    if (sameSet(ips, planned.ips)) return { ...planned, outcome: "kept" };
    return {
      serviceKey: planned.serviceKey,
      outcome: "kept",
      ips,
      pool: undefined,
      pools: ips.map(() => undefined),
    };
  };
  const allocations: AllocationPlan = {
    ...proposed.services,
    services: proposed.services.services.map(standing),
    orphans: [],
  };
  return {
    nodes: proposed.nodes.map((p) => ({ ...p, machineState: undefined, actions: [] })),
    services: allocations,
  };
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x) => b.includes(x));
}
