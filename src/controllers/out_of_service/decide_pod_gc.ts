/**
 * Which Pods of a Node Keelson force-deletes itself, at once, instead of waiting for
 * kube-controller-manager's pod garbage collector (PodGC), which does the same only every 20 s
 * (its `gcCheckPeriod`, not configurable). The rule is PodGC's `gcTerminating`, narrowed:
 *
 * - PodGC force-deletes a Pod that is terminating (`deletionTimestamp` set) on a Node that is not
 *   Ready (its Ready condition not `True`) and carries the `node.kubernetes.io/out-of-service`
 *   taint;
 * - Keelson does so only for a Node whose out-of-service taint it added itself (its marker
 *   annotation beside the taint), only while `[power] out_of_service` is on and power actions are
 *   not held, and only the Pods whose `spec.nodeName` is that Node (checked here, not only trusted
 *   to the list's field selector).
 *
 * A Pod that is not terminating is never deleted: one that tolerates the taint stays, and one the
 * taint-eviction controller has not yet marked is looked at again. The taint-eviction controller
 * marks the Pods just after the taint lands, so the Node is listed again every
 * `POD_SWEEP_INTERVAL_MS` until no Pod is left on it or `POD_SWEEP_WINDOW_MS` has passed since
 * this process first found the Node eligible; after that PodGC's own pass does the rest.
 *
 * Pure: the controller lists the Pods and carries the deletions out.
 *
 * @module
 */
import type { V1Node } from "@kubernetes/client-node";
import type { NodePod } from "../../kube/node_pods.ts";
import { readyStatus } from "../node_lifecycle/decide_lifecycle.ts";
import { hasOutOfServiceTaint, OUT_OF_SERVICE_MARKER } from "./decide_out_of_service.ts";

/** How often a Node's Pods are listed again while some are not yet terminating. */
export const POD_SWEEP_INTERVAL_MS = 1_000;
/** How long after this process first found the Node eligible it keeps looking. */
export const POD_SWEEP_WINDOW_MS = 30_000;

/** What the rule reads besides the Node. */
export interface PodGcPolicy {
  /** `[power] out_of_service`. */
  enabled: boolean;
  /** Why power actions are held right now (a rejected reload); undefined when they are not. */
  held?: string | undefined;
}

/**
 * Why Keelson would not force-delete any Pod of this Node now, or undefined when it would (the
 * Node may then be listed).
 * @param node the Node, from the cache
 * @param policy the switch and the guard
 * @returns the reason, or undefined
 */
export function podGcBlockedBy(node: V1Node, policy: PodGcPolicy): string | undefined {
  if (!policy.enabled) return "[power] out_of_service is off";
  if (policy.held !== undefined) return policy.held;
  if (!hasOutOfServiceTaint(node)) return "the node has no out-of-service taint";
  if (node.metadata?.annotations?.[OUT_OF_SERVICE_MARKER] === undefined) {
    return "the out-of-service taint is not one Keelson added";
  }
  if (readyStatus(node) === "True") return "the node is Ready";
  return undefined;
}

/** Everything one decision reads. */
export interface PodGcInput {
  node: V1Node;
  /** The Pods listed for the Node (untrusted: each is checked against the Node's name). */
  pods: readonly NodePod[];
  policy: PodGcPolicy;
  /** When this process first found the Node eligible (this episode), by `nowMs`'s clock. */
  sweepStartedMs: number;
  nowMs: number;
}

/** The decision. */
export interface PodGcDecision {
  /** Why nothing is deleted at all; undefined when the Node is eligible. */
  blocked?: string;
  /** The Pods to force-delete, each with its uid as a precondition. */
  deletions: NodePod[];
  /** Pods on the Node that are not terminating (left alone). */
  notTerminating: number;
  /** List again after this long; undefined: this Node's sweep is over. */
  recheckAfterMs?: number;
}

/**
 * Decides which of the listed Pods to force-delete, and whether to look again.
 * @param input the Node, its Pods, the policy and the sweep's clock
 * @returns the deletions and when to list again
 */
export function decidePodGc(input: PodGcInput): PodGcDecision {
  const { node, pods, nowMs } = input;
  const blocked = podGcBlockedBy(node, input.policy);
  if (blocked !== undefined) return { blocked, deletions: [], notTerminating: 0 };
  const name = node.metadata?.name ?? "";
  const mine = pods.filter((pod) => name !== "" && pod.nodeName === name);
  const deletions = mine.filter((pod) => terminating(pod));
  const notTerminating = mine.length - deletions.length;
  const decision: PodGcDecision = { deletions, notTerminating };
  // none left at all: nothing more can become terminating here; otherwise look again (a deletion
  // may also fail), within the window
  const left = nowMs - input.sweepStartedMs < POD_SWEEP_WINDOW_MS;
  if (mine.length > 0 && left) decision.recheckAfterMs = POD_SWEEP_INTERVAL_MS;
  return decision;
}

/** Terminating as PodGC means it: a deletion timestamp is set (a valid time, to be strict). */
function terminating(pod: NodePod): boolean {
  return pod.deletionTimestamp !== undefined && Number.isFinite(Date.parse(pod.deletionTimestamp));
}
