/**
 * What the node-lifecycle controller should do to one Node, decided from the Node and the
 * provider's answers (upstream `MonitorNodes`, plus Keelson's retired/maintenance taints and the
 * rule that a never-initialized Node of an unknown machine is not deleted). Guards that depend on
 * time or on the last reload (rate limit, removed fraction, dry run) are applied by the caller.
 * Shared by the controller and `keelson plan`.
 *
 * @module
 */
import type { V1Node, V1Taint } from "@kubernetes/client-node";
import type { InstancesV2, MachineState } from "../../cloud/provider.ts";
import { asError } from "../../log/error_message.ts";
import { hasUninitializedTaint } from "../node/node_labels.ts";
import { readyCondition } from "../../kube/node_ready.ts";

/** Upstream's taint on a Node whose instance is shut down. */
export const SHUTDOWN_TAINT = "node.cloudprovider.kubernetes.io/shutdown";
/** Keelson's taint on a Ready Node whose machine is retired in the inventory. */
export const RETIRED_TAINT = "keelson.io/retired";
/** Keelson's taint on a Node whose machine is in maintenance. */
export const MAINTENANCE_TAINT = "keelson.io/maintenance";

/** The decision for one Node. */
export interface LifecycleDecision {
  /** Ready condition status (`Unknown` when missing). */
  ready: "True" | "False" | "Unknown";
  /** The machine's state, or undefined when not asked or when the provider could not tell. */
  state: MachineState | undefined;
  /** Set when the Node should be deleted (subject to the caller's guards): why. */
  delete?: string;
  /** Set when deletion would follow upstream but Keelson refuses it: why. */
  blocked?: string;
  /** Taints to add (absent from the Node now). */
  addTaints: V1Taint[];
  /** Taint keys to remove (present on the Node now). */
  removeTaints: string[];
  /** Set when the provider could not answer: the Node is skipped this round. */
  error?: Error;
}

/**
 * The Node's Ready condition status.
 * @param node the Node
 * @returns `True`, `False` or `Unknown` (missing condition)
 */
export function readyStatus(node: V1Node): "True" | "False" | "Unknown" {
  return readyCondition(node) ?? "Unknown";
}

/**
 * Decides the lifecycle action for `node`.
 * @param node the Node from the lister
 * @param instances the provider's InstancesV2 (uses `instanceState` when it has one)
 * @returns the decision; provider errors are returned in `error`, never thrown
 */
export async function decideLifecycle(
  node: V1Node,
  instances: InstancesV2,
): Promise<LifecycleDecision> {
  const ready = readyStatus(node);
  const decision: LifecycleDecision = { ready, state: undefined, addTaints: [], removeTaints: [] };
  const taints = new Set((node.spec?.taints ?? []).map((t) => t.key));
  const want = (key: string, present: boolean): void => {
    if (present && !taints.has(key)) decision.addTaints.push({ key, effect: "NoSchedule" });
    if (!present && taints.has(key)) decision.removeTaints.push(key);
  };
  try {
    decision.state = await machineState(node, instances, ready);
  } catch (error) {
    decision.error = asError(error);
  }
  const state = decision.state;
  if (ready === "True") {
    // Upstream: a Ready Node loses the shutdown taint, whatever the provider says.
    want(SHUTDOWN_TAINT, false);
    if (state !== undefined && state !== "absent") {
      want(RETIRED_TAINT, state === "retired");
      want(MAINTENANCE_TAINT, state === "maintenance");
    }
    return decision;
  }
  if (state === undefined) return decision;
  if (state === "absent" || state === "retired") {
    const why = state === "retired"
      ? "its machine is retired in the inventory"
      : "it does not exist in the cloud provider";
    if (state === "absent" && hasUninitializedTaint(node)) {
      // Keelson: a Node we never matched is a registration problem, not a departed machine
      // (upstream deletes it, kubernetes/kubernetes#124825; hcloud-ccm#578).
      decision.blocked =
        `${why}, but it was never initialized (it still carries the uninitialized taint)`;
    } else {
      decision.delete = why;
    }
    return decision;
  }
  if (state === "shutdown") want(SHUTDOWN_TAINT, true);
  want(MAINTENANCE_TAINT, state === "maintenance");
  if (state === "active") want(RETIRED_TAINT, false);
  return decision;
}

async function machineState(
  node: V1Node,
  instances: InstancesV2,
  ready: string,
): Promise<MachineState | undefined> {
  if (instances.instanceState) return await instances.instanceState(node);
  // A provider without Keelson's extension: upstream's calls, and none for Ready Nodes.
  if (ready === "True") return undefined;
  if (!(await instances.instanceExists(node))) return "absent";
  return (await instances.instanceShutdown(node)) ? "shutdown" : "active";
}
