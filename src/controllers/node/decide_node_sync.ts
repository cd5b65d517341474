/**
 * What one sync of one Node should do, decided from the Node and the provider's answers and
 * nothing else. The controller executes the decision; `keelson plan` prints it.
 *
 * @module
 */
import type { V1Node, V1NodeAddress } from "@kubernetes/client-node";
import {
  type InstanceMetadata,
  InstanceNotFoundError,
  type InstancesV2,
  ProviderError,
} from "../../cloud/provider.ts";
import { asError } from "../../log/error_message.ts";
import { addressUpdate, applyInitialization, type Initialization } from "./initialize_node.ts";
import { gaLabelsToReconcile, hasUninitializedTaint } from "./node_labels.ts";

/** Event reason on a Node whose machine the provider does not know. */
export const REASON_INSTANCE_NOT_FOUND = "InstanceNotFound";
/** Event reason on a Node whose initialization failed for another reason. */
export const REASON_INITIALIZATION_FAILED = "InitializationFailed";
/** Event reason on a Node initialized successfully (upstream). */
export const REASON_SYNCED = "Synced";

/** The decision for one Node. */
export type NodeSyncDecision =
  /** Already initialized: only the beta→GA label reconcile (empty when nothing to do). */
  | { kind: "initialized"; gaLabels: Record<string, string> }
  /** Initialize: one PUT, then the addresses (undefined: no change). */
  | {
    kind: "initialize";
    metadata: InstanceMetadata;
    initialization: Initialization;
    addresses: V1NodeAddress[] | undefined;
  }
  /** The provider returned no metadata: leave the Node tainted, do not retry (upstream). */
  | { kind: "skip"; reason: string }
  /** No machine matches: stay tainted, Warning event, retry with backoff. */
  | { kind: "not-found"; error: InstanceNotFoundError }
  /** Anything else that stops initialization: stay tainted, retry when `retriable`. */
  | { kind: "failed"; error: Error; retriable: boolean };

/**
 * Decides what a sync of `node` does (upstream 1.2, steps 2–4).
 * @param node the Node from the lister
 * @param instances the provider's InstancesV2
 * @returns the decision; never throws (errors become `not-found` or `failed`)
 */
export async function decideNodeSync(
  node: V1Node,
  instances: InstancesV2,
): Promise<NodeSyncDecision> {
  if (!hasUninitializedTaint(node)) {
    return { kind: "initialized", gaLabels: gaLabelsToReconcile(node.metadata?.labels) };
  }
  let metadata: InstanceMetadata | null;
  try {
    metadata = await instances.instanceMetadata(node);
  } catch (error) {
    if (error instanceof InstanceNotFoundError) return { kind: "not-found", error };
    const retriable = error instanceof ProviderError ? error.retriable : true;
    return { kind: "failed", error: asError(error), retriable };
  }
  if (metadata === null) {
    return { kind: "skip", reason: "the cloud provider returned no metadata (nil metadata)" };
  }
  try {
    const initialization = applyInitialization(node, metadata);
    const addresses = addressUpdate(initialization.node, metadata);
    return { kind: "initialize", metadata, initialization, addresses };
  } catch (error) {
    return { kind: "failed", error: asError(error), retriable: true };
  }
}
