/**
 * The cloud-node controller (upstream `cloud-node-controller`). Watches Nodes; initializes those
 * carrying `node.cloudprovider.kubernetes.io/uninitialized` from the provider's InstanceMetadata
 * in one PUT (providerID, labels, taint removal) followed by a status-address patch; reconciles
 * beta→GA labels on initialized Nodes; refreshes every untainted Node's addresses periodically.
 *
 * @module
 */
import type { V1Node } from "@kubernetes/client-node";
import type { Registry } from "prom-client";
import type { InstancesV2 } from "../../cloud/provider.ts";
import { logger } from "../../log/logging.ts";
import {
  type ClusterWriter,
  type EventRecorder,
  type Informer,
  objectKey,
} from "../../kube/ports.ts";
import { delay } from "../../kube/delay.ts";
import { retryOnConflict } from "../../kube/retry_on_conflict.ts";
import { defaultControllerRateLimiter } from "../../kube/queue_rate_limiters.ts";
import { runWorkers, WorkQueue } from "../../kube/work_queue.ts";
import { nodeRef } from "../../kube/event_targets.ts";
import { done, failed, type SyncResult } from "../../kube/sync_result.ts";
import {
  decideNodeSync,
  REASON_INITIALIZATION_FAILED,
  REASON_INSTANCE_NOT_FOUND,
  REASON_SYNCED,
} from "./decide_node_sync.ts";
import { addressUpdate, applyInitialization, type Initialization } from "./initialize_node.ts";
import { hasUninitializedTaint } from "./node_labels.ts";
import { type NodeControllerMetrics, nodeControllerMetrics } from "./metrics.ts";

/** The queue name (and the workqueue metrics' `name` label). */
export const NODE_QUEUE_NAME = "Nodes";
/** Upstream's retry-on-conflict for the initialization PUT: 20 steps, 50 ms, jitter 1.0. */
const UPDATE_STEPS = 20;
const UPDATE_BASE_MS = 50;

/** What the controller reads and writes. */
export interface NodeControllerDeps {
  nodes: Informer<V1Node>;
  writer: ClusterWriter;
  events: EventRecorder;
  instances: InstancesV2;
  registry: Registry;
}

/** Tuning. */
export interface NodeControllerOptions {
  /** Sync workers (`concurrent_node_syncs`). @default 1 */
  workers?: number;
  /** Period of the address refresh (`node_status_update_frequency`). @default 300000 */
  statusUpdateFrequencyMs?: number;
  /** Milliseconds since the epoch. @default Date.now */
  now?: () => number;
  /** Sleeps between conflict retries and address refreshes. @default delay */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** The work queue (tests inject one with a fake clock). @default a "Nodes" queue */
  queue?: WorkQueue;
}

/** The cloud-node controller. */
export class NodeController {
  #deps: NodeControllerDeps;
  #workers: number;
  #periodMs: number;
  #now: () => number;
  #sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  #queue: WorkQueue;
  #metrics: NodeControllerMetrics;
  #log = logger("controllers", "cloud-node");

  /**
   * @param deps informer, writer, event recorder, provider instances, metrics registry
   * @param options workers, address refresh period, clock hooks
   */
  constructor(deps: NodeControllerDeps, options: NodeControllerOptions = {}) {
    this.#deps = deps;
    this.#workers = options.workers ?? 1;
    this.#periodMs = options.statusUpdateFrequencyMs ?? 300_000;
    this.#now = options.now ?? Date.now;
    this.#sleep = options.sleep ?? delay;
    this.#queue = options.queue ??
      new WorkQueue({
        name: NODE_QUEUE_NAME,
        rateLimiter: defaultControllerRateLimiter(),
        registry: deps.registry,
      });
    this.#metrics = nodeControllerMetrics(deps.registry);
  }

  /**
   * Runs until `signal` aborts: waits for the cache, then the sync workers and the address loop.
   * @param signal stops the controller
   * @returns when every worker has stopped
   */
  async run(signal: AbortSignal): Promise<void> {
    const unsubscribe = this.#deps.nodes.subscribe((event) => {
      if (event.type !== "delete") this.#queue.add(objectKey(event.object));
    });
    try {
      if (!(await this.#deps.nodes.waitForSync(signal))) return;
      for (const node of this.#deps.nodes.list()) this.#queue.add(objectKey(node));
      await Promise.all([
        runWorkers(this.#queue, this.#workers, (key) => this.sync(key, signal), signal),
        this.#addressLoop(signal),
      ]);
    } finally {
      unsubscribe();
      this.#queue.shutDown();
    }
  }

  /**
   * Syncs one Node (upstream `syncNode`).
   * @param key the Node name
   * @param signal aborts conflict-retry sleeps
   * @returns `done`, or `failed` (retried with backoff, the Node stays tainted)
   */
  async sync(key: string, signal?: AbortSignal): Promise<SyncResult> {
    const node = this.#deps.nodes.get(key);
    if (!node) return done();
    const decision = await decideNodeSync(node, this.#deps.instances);
    switch (decision.kind) {
      case "initialized":
        if (Object.keys(decision.gaLabels).length === 0) return done();
        await this.#deps.writer.patchNode(
          key,
          { metadata: { labels: decision.gaLabels } },
          "strategic",
        );
        return done();
      case "skip":
        this.#log.info("Skip sync of node {node}: {reason}", {
          node: key,
          reason: decision.reason,
        });
        return done();
      case "not-found":
        this.#deps.events.event(
          nodeRef(node),
          "Warning",
          REASON_INSTANCE_NOT_FOUND,
          `Cannot initialize node: no machine in the inventory matches (tried ${decision.error.tried})`,
        );
        return failed(decision.error, { retriable: true });
      case "failed":
        this.#deps.events.event(
          nodeRef(node),
          "Warning",
          REASON_INITIALIZATION_FAILED,
          decision.error.message,
        );
        return failed(decision.error, { retriable: decision.retriable });
      case "initialize":
        return await this.#initialize(key, decision.metadata, signal, {
          from: node,
          initialization: decision.initialization,
        });
    }
  }

  async #initialize(
    key: string,
    metadata: Parameters<typeof applyInitialization>[1],
    signal?: AbortSignal,
    decided?: { from: V1Node; initialization: Initialization },
  ): Promise<SyncResult> {
    this.#log.info("Initializing node {node} with cloud provider", { node: key });
    let updated: V1Node | undefined;
    try {
      // client-go's retry.DefaultRetry around the read-modify-write
      updated = await retryOnConflict(
        { steps: UPDATE_STEPS, delayMs: UPDATE_BASE_MS, jitter: 1, signal, sleep: this.#sleep },
        () => {
          const current = this.#deps.nodes.get(key);
          if (!current || !hasUninitializedTaint(current)) return Promise.resolve(undefined);
          // the decision already applied it to this very object: no second deep copy on the
          // way to the PUT (a conflict retry reads a newer object and applies it again)
          const { node, warnings } = current === decided?.from
            ? decided.initialization
            : applyInitialization(current, metadata);
          for (const warning of warnings) {
            this.#log.warn("{node}: {warning}", { node: key, warning });
          }
          return this.#deps.writer.replaceNode(node);
        },
      );
    } catch (error) {
      return failed(error, { retriable: true });
    }
    if (!updated) return done();
    const created = creationMs(updated);
    if (created !== undefined) {
      this.#metrics.taintRemovalDelay.observe((this.#now() - created) / 1000);
    }
    // Right after the PUT, "so that users do not see any significant delay"; failures are only
    // logged because the periodic loop repairs addresses later.
    await this.#updateAddresses(updated, metadata);
    this.#deps.events.event(nodeRef(updated), "Normal", REASON_SYNCED, "Node synced successfully");
    if (created !== undefined) {
      this.#metrics.initialSyncDelay.observe((this.#now() - created) / 1000);
    }
    return done();
  }

  async #updateAddresses(
    node: V1Node,
    metadata: Parameters<typeof addressUpdate>[1],
  ): Promise<void> {
    const name = node.metadata?.name ?? "";
    try {
      const addresses = addressUpdate(node, metadata);
      if (addresses === undefined) return;
      // A JSON merge patch replaces the whole list (status.addresses declares a wrong merge key).
      await this.#deps.writer.patchNodeStatus(name, { status: { addresses } }, "merge");
    } catch (error) {
      this.#log.warn("Cannot update the addresses of node {node}: {error}", { node: name, error });
    }
  }

  /**
   * One pass of the periodic address refresh (upstream `UpdateNodeStatus`): every untainted Node.
   * @returns when every Node has been looked at
   */
  async syncAddresses(): Promise<void> {
    const nodes = this.#deps.nodes.list().filter((node) => !hasUninitializedTaint(node));
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < nodes.length) {
        const node = nodes[next++] as V1Node;
        try {
          const metadata = await this.#deps.instances.instanceMetadata(node);
          if (metadata) await this.#updateAddresses(node, metadata);
        } catch (error) {
          this.#log.warn("Cannot refresh the addresses of node {node}: {error}", {
            node: node.metadata?.name,
            error,
          });
        }
      }
    };
    await Promise.all(Array.from({ length: this.#workers }, worker));
  }

  async #addressLoop(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.syncAddresses();
      await this.#sleep(this.#periodMs, signal);
    }
  }
}

function creationMs(node: V1Node): number | undefined {
  const created = node.metadata?.creationTimestamp;
  if (created === undefined) return undefined;
  const ms = new Date(created).getTime();
  return Number.isNaN(ms) ? undefined : ms;
}
