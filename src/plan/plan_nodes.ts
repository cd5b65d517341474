/**
 * Offline: what the cloud-node and node-lifecycle controllers would do to each Node of a cluster
 * snapshot. Runs the controllers' own decision functions (`decideNodeSync`, `decideLifecycle`,
 * `addressUpdate`) against the provider, and the lifecycle guards that need no history (rate
 * limit, dry run). Used by `keelson plan`.
 *
 * @module
 */
import type { V1Node, V1NodeAddress } from "@kubernetes/client-node";
import { InstanceNotFoundError, type InstancesV2 } from "../cloud/provider.ts";
import { decideNodeSync } from "../controllers/node/decide_node_sync.ts";
import { addressUpdate } from "../controllers/node/initialize_node.ts";
import { decideLifecycle } from "../controllers/node_lifecycle/decide_lifecycle.ts";
import { DeletionRateLimiter } from "../controllers/node_lifecycle/deletion_guards.ts";
import type { NodeLifecyclePolicy } from "../controllers/node_lifecycle/node_lifecycle_controller.ts";
import { compareCodeUnits } from "../text/code_unit_order.ts";
import { errorMessage } from "../log/error_message.ts";

/** One thing a controller would do to a Node. */
export type PlannedNodeAction =
  | {
    action: "initialize";
    providerID: string;
    labels: Record<string, string>;
    addresses: V1NodeAddress[] | undefined;
    warnings: string[];
  }
  | { action: "stay-tainted"; reason: string; retried: boolean }
  | { action: "set-labels"; labels: Record<string, string> }
  | { action: "set-addresses"; addresses: V1NodeAddress[] }
  | { action: "delete"; reason: string }
  | { action: "keep"; reason: string }
  | { action: "taint"; taints: string[] }
  | { action: "untaint"; taints: string[] }
  | { action: "skip"; reason: string }
  /** A pod CIDR announced over BGP (route controller), towards the machine's address. */
  | { action: "announce-route"; cidr: string; nextHop: string }
  /** A pod CIDR that is not announced, and why. */
  | { action: "refuse-route"; cidr: string; reason: string };

/** The plan for one Node; `actions` empty means nothing to do. */
export interface NodePlan {
  node: string;
  /** Ready condition status. */
  ready: string;
  /** The machine's state as the provider reports it, when it can tell. */
  machineState: string | undefined;
  actions: PlannedNodeAction[];
}

/** Options of `planNodes`. */
export interface PlanNodesOptions {
  /** The lifecycle policy (`[node_lifecycle]`). */
  policy: NodeLifecyclePolicy;
  /** Milliseconds since the epoch, for the rate limit window. @default Date.now() */
  now?: number;
  /**
   * Why every deletion is held back (the reload guard: too many machines removed at once), if
   * it would be.
   */
  deletionsBlocked?: string;
}

/**
 * Plans every Node, sorted by name.
 * @param nodes the snapshot's Nodes
 * @param instances the provider's InstancesV2 (built from the inventory)
 * @param options lifecycle policy
 * @returns one plan per Node
 */
export async function planNodes(
  nodes: readonly V1Node[],
  instances: InstancesV2,
  options: PlanNodesOptions,
): Promise<NodePlan[]> {
  const limiter = new DeletionRateLimiter();
  const now = options.now ?? Date.now();
  const sorted = [...nodes].sort((a, b) =>
    compareCodeUnits(a.metadata?.name ?? "", b.metadata?.name ?? "")
  );
  const plans: NodePlan[] = [];
  for (const node of sorted) {
    const actions: PlannedNodeAction[] = [];
    const sync = await decideNodeSync(node, instances);
    switch (sync.kind) {
      case "initialize":
        actions.push({
          action: "initialize",
          providerID: sync.initialization.providerID,
          labels: sync.initialization.labels,
          addresses: sync.addresses,
          warnings: sync.initialization.warnings,
        });
        break;
      case "not-found":
        actions.push({ action: "stay-tainted", reason: sync.error.message, retried: true });
        break;
      case "failed":
        actions.push({
          action: "stay-tainted",
          reason: sync.error.message,
          retried: sync.retriable,
        });
        break;
      case "skip":
        actions.push({ action: "stay-tainted", reason: sync.reason, retried: false });
        break;
      case "initialized":
        if (Object.keys(sync.gaLabels).length > 0) {
          actions.push({ action: "set-labels", labels: sync.gaLabels });
        }
        actions.push(...(await periodicAddresses(node, instances)));
        break;
    }
    const life = await decideLifecycle(node, instances);
    if (life.error) actions.push({ action: "skip", reason: life.error.message });
    if (life.addTaints.length > 0) {
      actions.push({ action: "taint", taints: life.addTaints.map((t) => `${t.key}:${t.effect}`) });
    }
    if (life.removeTaints.length > 0) {
      actions.push({ action: "untaint", taints: life.removeTaints });
    }
    if (life.blocked) actions.push({ action: "keep", reason: life.blocked });
    if (life.delete) {
      actions.push(
        options.deletionsBlocked
          ? { action: "keep", reason: `${life.delete}; held back: ${options.deletionsBlocked}` }
          : deletion(life.delete, limiter, now, options.policy),
      );
    }
    plans.push({
      node: node.metadata?.name ?? "",
      ready: life.ready,
      machineState: life.state,
      actions,
    });
  }
  return plans;
}

async function periodicAddresses(
  node: V1Node,
  instances: InstancesV2,
): Promise<PlannedNodeAction[]> {
  try {
    const metadata = await instances.instanceMetadata(node);
    const addresses = metadata && addressUpdate(node, metadata);
    return addresses ? [{ action: "set-addresses", addresses }] : [];
  } catch (error) {
    // The lifecycle part of the plan says what happens to a Node of an unknown machine.
    if (error instanceof InstanceNotFoundError) return [];
    // The controller logs and skips such a Node on its periodic refresh.
    return [{ action: "skip", reason: `addresses not refreshed: ${errorMessage(error)}` }];
  }
}

function deletion(
  why: string,
  limiter: DeletionRateLimiter,
  now: number,
  policy: NodeLifecyclePolicy,
): PlannedNodeAction {
  if (!limiter.tryTake(now, policy.maxDeletionsPerInterval, policy.deletionIntervalMs)) {
    return {
      action: "keep",
      reason: `${why}; held back by the rate limit (at most ${policy.maxDeletionsPerInterval} per ${
        policy.deletionIntervalMs / 1000
      }s), deleted in a later interval`,
    };
  }
  if (policy.dryRun) return { action: "keep", reason: `${why}; dry_run only records an event` };
  return { action: "delete", reason: why };
}
