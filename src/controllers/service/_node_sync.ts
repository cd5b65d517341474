/**
 * The node sync (upstream `nodeSyncLoop`): when the set of eligible Nodes changes, every
 * Service the controller ensured whose node set differs (by names and providerIDs) gets
 * `updateLoadBalancer` — not a full ensure. A Service still waiting for its address is left to its
 * retry. Folder-internal.
 *
 * @module
 */
import type { V1Node, V1Service } from "@kubernetes/client-node";
import type { LoadBalancer } from "../../cloud/provider.ts";
import type { Clock } from "../../kube/clock.ts";
import { done, type SyncResult } from "../../kube/sync_result.ts";
import { currentIngress } from "./ingress.ts";
import { type NodeSetKey, nodeSetsEqual } from "./node_set.ts";
import type { ServiceMetrics } from "./service_metrics.ts";
import { errorMessage } from "../../log/error_message.ts";

/** What one node-sync pass needs from the controller. */
export interface NodeSyncInput {
  clusterName: string;
  /** Fan-out: how many updateLoadBalancer calls run at once. */
  workers: number;
  /** The eligible Nodes now, and their key. */
  nodeSet: { nodes: V1Node[]; key: NodeSetKey };
  /** The node set each ensured Service was last given; updated in place before each call. */
  remembered: Map<string, { service: V1Service; nodes: NodeSetKey }>;
  /** The Service as cached now, when it still wants a load balancer. */
  current: (key: string) => V1Service | undefined;
  loadBalancer: LoadBalancer;
  event: (
    service: V1Service,
    type: "Normal" | "Warning",
    reason: string,
    message: string,
  ) => void;
  /** Pushes a Service whose update failed onto the service queue (a full ensure). */
  retry: (key: string) => void;
  metrics: ServiceMetrics;
  clock: Clock;
}

const MAX_NODE_NAMES_IN_MESSAGE = 20;

/**
 * Runs one node-sync pass.
 * @param input the controller's state and ports
 * @returns always done: failed Services are retried through the service queue
 */
export async function syncNodeSets(input: NodeSyncInput): Promise<SyncResult> {
  const started = input.clock.now();
  const key = input.nodeSet.key;
  const targets: [string, V1Service][] = [];
  // Services share node-set keys (one per ensure burst or pass): compare each distinct key once,
  // not once per Service (O(Services × Nodes) per pass with thousands of both)
  const equal = new Map<NodeSetKey, boolean>();
  for (const [serviceKey, entry] of input.remembered) {
    const service = input.current(serviceKey);
    // a pending Service (no address yet) has no load balancer to update: its retry, a full
    // ensure, takes the node set of its time
    if (!service || currentIngress(service).length === 0) continue;
    let same = equal.get(entry.nodes);
    if (same === undefined) {
      same = entry.nodes === key || nodeSetsEqual(entry.nodes, key);
      equal.set(entry.nodes, same);
    }
    if (!same) targets.push([serviceKey, service]);
  }
  let failures = 0;
  for (let index = 0; index < targets.length; index += Math.max(1, input.workers)) {
    const batch = targets.slice(index, index + Math.max(1, input.workers));
    const results = await Promise.all(
      batch.map(([serviceKey, service]) => updateOne(input, serviceKey, service, key)),
    );
    failures += results.filter((ok) => !ok).length;
  }
  if (failures > 0) input.metrics.nodeSyncErrors.inc();
  input.metrics.nodeSyncLatency.observe((input.clock.now() - started) / 1000);
  return done();
}

async function updateOne(
  input: NodeSyncInput,
  serviceKey: string,
  service: V1Service,
  key: NodeSetKey,
): Promise<boolean> {
  const entry = input.remembered.get(serviceKey);
  // Stored before the call, as upstream: a failure is retried by a full ensure, not here.
  if (entry) entry.nodes = key;
  input.metrics.loadBalancerSync.inc();
  const started = input.clock.now();
  try {
    await input.loadBalancer.updateLoadBalancer(input.clusterName, service, input.nodeSet.nodes);
    input.metrics.updateHostLatency.observe((input.clock.now() - started) / 1000);
  } catch (error) {
    try {
      const { exists } = await input.loadBalancer.getLoadBalancer(input.clusterName, service);
      if (!exists) return true;
    } catch {
      // cannot tell: report the update failure below
    }
    const names = input.nodeSet.nodes.map((node) => node.metadata?.name ?? "");
    const shown = names.slice(0, MAX_NODE_NAMES_IN_MESSAGE).join(", ");
    const more = names.length > MAX_NODE_NAMES_IN_MESSAGE
      ? ` and ${names.length - MAX_NODE_NAMES_IN_MESSAGE} more`
      : "";
    input.event(
      service,
      "Warning",
      "UpdateLoadBalancerFailed",
      `Error updating load balancer with new hosts [${shown}]${more} (${names.length} nodes): ${
        errorMessage(error)
      }`,
    );
    input.retry(serviceKey);
    return false;
  }
  if (input.nodeSet.nodes.length === 0) {
    input.event(
      service,
      "Warning",
      "UnAvailableLoadBalancer",
      "There are no available nodes for LoadBalancer",
    );
  } else {
    input.event(service, "Normal", "UpdatedLoadBalancer", "Updated load balancer with new hosts");
  }
  return true;
}
