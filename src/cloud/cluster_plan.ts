/**
 * `keelson plan`'s view of a provider (Keelson extension): what it would do to a cluster, judged
 * offline from a snapshot's objects with the decision functions `keelson run` uses
 * (`CloudProvider.planCluster`). The provider's own result types are assignable to these;
 * `src/plan` prints them.
 *
 * @module
 */
import type { V1Node, V1Service } from "@kubernetes/client-node";

/** What one LoadBalancer Service would get. */
export interface PlannedAllocation {
  /** `namespace/name`. */
  serviceKey: string;
  /** `kept`: its status already shows these addresses; `allocated`: new or changed; `pending`: none. */
  outcome: "kept" | "allocated" | "pending";
  /** Canonical addresses (empty when pending). */
  ips: string[];
  /** The pool they come from (undefined when pending or outside every pool). */
  pool: string | undefined;
  /** The pool of each address of `ips`, in order (a dual-stack pair may span two pools). */
  pools: (string | undefined)[];
  /** Why it stays pending: a machine-readable reason such as `PoolExhausted`. */
  reason?: string;
  /** The sentence explaining `reason`, quoting the values. */
  message?: string;
}

/** A LoadBalancer Service of a class the provider does not handle: another implementation's. */
export interface OtherClassService {
  serviceKey: string;
  /** Its `spec.loadBalancerClass`; absent when unset. */
  loadBalancerClass?: string;
}

/** An address a Service keeps although no pool offers it any more. */
export interface OrphanedAddress {
  serviceKey: string;
  /** Canonical text of the address. */
  ip: string;
  /** The pool the address was attributed to, even if removed. */
  pool: string | undefined;
  /** Why no pool offers it, e.g. `outside`, `reserved`. */
  why: string;
}

/** Usage of one pool and family after the plan; `total` is exact (IPv6 pools exceed 2^53). */
export interface PlannedPoolUsage {
  pool: string;
  family: 4 | 6;
  total: bigint;
  used: number;
}

/** What every LoadBalancer Service of the snapshot would get. */
export interface AllocationPlan {
  /** One entry per LoadBalancer Service the provider handles, sorted by key. */
  services: PlannedAllocation[];
  /** LoadBalancer Services left to another implementation by their class, sorted by key. */
  otherClass: OtherClassService[];
  /** Addresses Services keep although no pool offers them any more. */
  orphans: OrphanedAddress[];
  /** Pool usage after the plan. */
  stats: PlannedPoolUsage[];
  /** Pool entries that did not parse (validation normally rejects them first). */
  problems: string[];
}

/** Which pod CIDRs would be announced for which Node, and which refused and why. */
export interface PodRoutePlan {
  announced: { node: string; cidr: string; nextHop: string }[];
  refused: { node: string; cidr: string; reason: string }[];
}

/** The cluster a plan is made for: a snapshot's objects. */
export interface PlannedCluster {
  nodes: readonly V1Node[];
  services: readonly V1Service[];
}
