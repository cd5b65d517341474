/**
 * The backend node set handed to the LoadBalancer provider (upstream's node predicates) and the
 * node-change triggers of the node sync (upstream's node event handlers). Readiness is deliberately
 * not a criterion (upstream 1.32+).
 *
 * @module
 */
import type { V1Node } from "@kubernetes/client-node";
import { compareCodeUnits } from "../../text/code_unit_order.ts";

/** Nodes carrying this label (with a value that is not a boolean false) get no LB traffic. */
export const EXCLUDE_FROM_LOAD_BALANCERS_LABEL =
  "node.kubernetes.io/exclude-from-external-load-balancers";

/** The cluster autoscaler's taint on a Node it is about to delete. */
export const TO_BE_DELETED_TAINT = "ToBeDeletedByClusterAutoscaler";

const FALSE_WORDS = new Set(["0", "f", "F", "FALSE", "false", "False"]);

/**
 * Whether the exclusion label excludes the Node. As upstream 1.34 (Go `ParseBool`): absent or a
 * boolean false keeps it; a boolean true or a value that does not parse (`""`, `yes`) excludes it.
 * @param node the Node
 * @returns true when the Node is excluded by its label
 */
export function excludedByLabel(node: V1Node): boolean {
  const value = node.metadata?.labels?.[EXCLUDE_FROM_LOAD_BALANCERS_LABEL];
  if (value === undefined) return false;
  // a boolean true excludes, and so does anything ParseBool rejects
  return !FALSE_WORDS.has(value);
}

/**
 * Whether the Node may back a load balancer: not being deleted, not excluded by label, not
 * tainted for deletion by the cluster autoscaler.
 * @param node the Node
 * @returns true when it belongs in the node set
 */
export function isLoadBalancerNode(node: V1Node): boolean {
  if (node.metadata?.deletionTimestamp) return false;
  if (excludedByLabel(node)) return false;
  return !(node.spec?.taints ?? []).some((taint) => taint.key === TO_BE_DELETED_TAINT);
}

/**
 * The eligible Nodes, sorted by name so the provider sees a stable order.
 * @param nodes every Node in the cache
 * @returns the node set
 */
export function loadBalancerNodes(nodes: readonly V1Node[]): V1Node[] {
  return nodes.filter(isLoadBalancerNode).sort(byName);
}

/** A node set as upstream compares it: name → providerID (addresses do not count). */
export type NodeSetKey = ReadonlyMap<string, string>;

function byName(a: V1Node, b: V1Node): number {
  return compareCodeUnits(a.metadata?.name ?? "", b.metadata?.name ?? "");
}

/**
 * The comparison key of a node set.
 * @param nodes the node set
 * @returns name → providerID
 */
export function nodeSetKey(nodes: readonly V1Node[]): NodeSetKey {
  return new Map(nodes.map((node) => [node.metadata?.name ?? "", node.spec?.providerID ?? ""]));
}

/**
 * Whether two node sets are equal by names and providerIDs.
 * @param a one key
 * @param b the other
 * @returns true when no UpdateLoadBalancer is needed
 */
export function nodeSetsEqual(a: NodeSetKey, b: NodeSetKey): boolean {
  if (a.size !== b.size) return false;
  for (const [name, providerID] of a) {
    if (b.get(name) !== providerID) return false;
  }
  return true;
}

/**
 * Whether a Node update can change node sets: the exclusion-label verdict flipped or the
 * providerID changed. Readiness, taints and addresses alone do not trigger (as upstream's
 * `shouldSyncUpdatedNode`).
 * @param old the Node before
 * @param node the Node after
 * @returns true when the node sync should run
 */
export function nodeUpdateNeedsSync(old: V1Node, node: V1Node): boolean {
  return excludedByLabel(old) !== excludedByLabel(node) ||
    (old.spec?.providerID ?? "") !== (node.spec?.providerID ?? "");
}

/**
 * The node set kept up to date from Node events, one Node at a time: during a burst of Node
 * events (each followed by a node-sync pass) nothing reads or filters every Node again. The
 * eligible Nodes are kept by name with their names sorted; the sorted list and the key are built
 * when asked for, the key again only after a membership or providerID change, so it stays the same
 * object while those hold.
 */
export class NodeSetTracker {
  #nodes = new Map<string, V1Node>();
  #names: string[] = [];
  #list: V1Node[] | undefined;
  #key: NodeSetKey | undefined;

  /**
   * Starts again from a whole cache snapshot.
   * @param all every Node in the cache
   */
  reset(all: readonly V1Node[]): void {
    const eligible = loadBalancerNodes(all);
    this.#nodes = new Map(eligible.map((node) => [node.metadata?.name ?? "", node]));
    this.#names = [...this.#nodes.keys()];
    this.#list = undefined;
    this.#key = undefined;
  }

  /**
   * Applies one change of the Node cache.
   * @param type the informer event's type
   * @param node the Node (the deleted one for `delete`)
   */
  apply(type: "add" | "update" | "delete", node: V1Node): void {
    const name = node.metadata?.name ?? "";
    const previous = this.#nodes.get(name);
    if (type === "delete" || !isLoadBalancerNode(node)) {
      if (previous === undefined) return;
      this.#nodes.delete(name);
      this.#names.splice(this.#position(name), 1);
      this.#list = undefined;
      this.#key = undefined;
      return;
    }
    this.#nodes.set(name, node);
    this.#list = undefined;
    if (previous === undefined) {
      this.#names.splice(this.#position(name), 0, name);
      this.#key = undefined;
    } else if ((previous.spec?.providerID ?? "") !== (node.spec?.providerID ?? "")) {
      this.#key = undefined;
    }
  }

  /** @returns the eligible Nodes sorted by name (the latest objects) and their key */
  current(): { nodes: V1Node[]; key: NodeSetKey } {
    this.#list ??= this.#names.map((name) => this.#nodes.get(name)!);
    this.#key ??= nodeSetKey(this.#list);
    return { nodes: this.#list, key: this.#key };
  }

  /** Where `name` is or would go in the sorted names (code-unit order). */
  #position(name: string): number {
    let lo = 0, hi = this.#names.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.#names[mid]! < name) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
