/**
 * The pure part of initializing a Node: the one PUT's content (providerID, topology and
 * instance-type labels with their beta twins, additional labels, taint removal) and the addresses
 * that follow. Shared by the controller and `keelson plan`.
 *
 * @module
 */
import type { V1Node, V1NodeAddress } from "@kubernetes/client-node";
import type { InstanceMetadata } from "../../cloud/provider.ts";
import {
  additionalLabelsToAdd,
  LABEL_BETA_INSTANCE_TYPE,
  LABEL_BETA_REGION,
  LABEL_BETA_ZONE,
  LABEL_INSTANCE_TYPE,
  LABEL_REGION,
  LABEL_ZONE,
  UNINITIALIZED_TAINT,
} from "./node_labels.ts";
import { applyProvidedNodeIp } from "./provided_node_ip.ts";
import { errorMessage } from "../../log/error_message.ts";

/** What initialization changes on a Node. */
export interface Initialization {
  /** The Node to PUT (a modified copy). */
  node: V1Node;
  /** The providerID the Node ends up with. */
  providerID: string;
  /** Labels set or added by this write. */
  labels: Record<string, string>;
  /** Warnings about labels left alone. */
  warnings: string[];
}

/**
 * The providerID to use: the provider's, else the Node's own.
 * @param node the Node
 * @param metadata the provider's answer
 * @returns the providerID
 * @throws {Error} when both are empty (upstream: "cloud provider does not set node provider ID")
 */
export function resolveProviderID(node: V1Node, metadata: InstanceMetadata): string {
  const providerID = metadata.providerID || node.spec?.providerID || "";
  if (providerID === "") {
    throw new Error(
      `Cannot initialize node "${
        node.metadata?.name ?? ""
      }": the cloud provider does not set node provider ID`,
    );
  }
  return providerID;
}

/**
 * Checks the provided-node-ip annotation against the cloud addresses (initialization fails on a
 * mismatch or a parse error, and the Node stays tainted).
 * @param node the Node
 * @param metadata the provider's answer
 * @throws {Error} naming the Node and the annotation when it is invalid or does not match
 */
export function validateProvidedNodeIp(node: V1Node, metadata: InstanceMetadata): void {
  try {
    applyProvidedNodeIp(node.metadata?.annotations, metadata.nodeAddresses);
  } catch (error) {
    throw new Error(
      `Cannot initialize node "${node.metadata?.name ?? ""}": provided node ip is not valid: ${
        errorMessage(error)
      }`,
      { cause: error },
    );
  }
}

/**
 * Applies the initialization modifiers to a copy of `node` (idempotent; re-run on each conflict
 * retry against the freshly read Node). `node` itself is never changed: it is the informer's
 * cached object.
 * @param node the Node as last read
 * @param metadata the provider's answer
 * @returns the Node to PUT and what changed
 * @throws {Error} when the providerID is missing or the provided node IP is not valid
 */
export function applyInitialization(node: V1Node, metadata: InstanceMetadata): Initialization {
  const providerID = resolveProviderID(node, metadata);
  validateProvidedNodeIp(node, metadata);
  // A copy of only the parts written below (metadata, spec, labels, taints): every change is a
  // new value on these copies, so the rest can be shared with the cached Node. A deep
  // structuredClone cost ~25-50 µs on the path of every initialization PUT.
  const spec = { ...node.spec };
  const meta = { ...node.metadata };
  const next: V1Node = { ...node, metadata: meta, spec };
  if (!spec.providerID) spec.providerID = providerID;
  const labels: Record<string, string> = {};
  if (metadata.instanceType) {
    labels[LABEL_INSTANCE_TYPE] = metadata.instanceType;
    labels[LABEL_BETA_INSTANCE_TYPE] = metadata.instanceType;
  }
  if (metadata.zone) {
    labels[LABEL_ZONE] = metadata.zone;
    labels[LABEL_BETA_ZONE] = metadata.zone;
  }
  if (metadata.region) {
    labels[LABEL_REGION] = metadata.region;
    labels[LABEL_BETA_REGION] = metadata.region;
  }
  const existing = { ...meta.labels, ...labels };
  const extra = additionalLabelsToAdd(existing, metadata.additionalLabels);
  Object.assign(labels, extra.added);
  meta.labels = { ...meta.labels, ...labels };
  spec.taints = (spec.taints ?? []).filter((t) => t.key !== UNINITIALIZED_TAINT);
  if (spec.taints.length === 0) delete spec.taints;
  return {
    node: next,
    providerID: spec.providerID ?? providerID,
    labels,
    warnings: extra.warnings,
  };
}

/**
 * The status addresses to write after initialization or on the periodic sync (upstream 1.5):
 * undefined when nothing is to write.
 * @param node the Node (its current addresses and annotation)
 * @param metadata the provider's answer
 * @returns the new list, or undefined when the cloud has none or nothing changed
 * @throws {RangeError} when the provided node IP is invalid or matches no cloud address
 */
export function addressUpdate(
  node: V1Node,
  metadata: InstanceMetadata,
): V1NodeAddress[] | undefined {
  let cloud = metadata.nodeAddresses;
  if (cloud.length === 0) return undefined;
  const current = node.status?.addresses ?? [];
  if (!cloud.some((a) => a.type === "Hostname")) {
    cloud = [...cloud, ...current.filter((a) => a.type === "Hostname")];
  }
  const next = applyProvidedNodeIp(node.metadata?.annotations, cloud);
  return addressesChanged(current, next) ? next : undefined;
}

/**
 * Whether the addresses changed: any difference in length, order, type or value. Upstream keys
 * the old list by type (last wins), which reports a dual-stack Node (two InternalIPs) as changed
 * on every pass and patches it every period; an exact comparison misses nothing and avoids that.
 * @param current the Node's addresses
 * @param next the computed addresses
 * @returns whether a write is needed
 */
export function addressesChanged(current: V1NodeAddress[], next: V1NodeAddress[]): boolean {
  if (current.length !== next.length) return true;
  return next.some((a, i) => current[i]?.type !== a.type || current[i]?.address !== a.address);
}
