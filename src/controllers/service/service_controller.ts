/**
 * The service (LoadBalancer) controller, after k8s.io/cloud-provider `controllers/service`.
 *
 * Watches Services and Nodes. For each Service it handles (type LoadBalancer and our class) it
 * calls the provider's `ensureLoadBalancer` with the eligible Nodes, then writes what changed of
 * the `service.kubernetes.io/load-balancer-cleanup` finalizer, the provider's annotations and
 * `status.loadBalancer.ingress` in one request. When a Service stops needing a load balancer
 * (deleted, type changed away, class no longer ours) it releases it, then clears the ingress and
 * removes the finalizer in one request. Services of another class are never touched. Writes go
 * through the `services/status` subresource, as upstream's. Events: `EnsuredLoadBalancer` and
 * `DeletedLoadBalancer` (not upstream's `EnsuringLoadBalancer`/`DeletingLoadBalancer`, which here
 * would precede them by milliseconds), and upstream's Warnings.
 *
 * Beyond upstream: a released address re-enqueues every pending Service (no ingress yet), so a
 * Service waiting for a taken or exhausted address gets it as soon as one is free.
 *
 * @module
 */
import type { V1Node, V1Service } from "@kubernetes/client-node";
import type { Registry } from "prom-client";
import {
  type EnsuredLoadBalancer,
  type LoadBalancer,
  ProviderError,
} from "../../cloud/provider.ts";
import { type Clock, systemClock } from "../../kube/clock.ts";
import {
  type ClusterWriter,
  type EventRecorder,
  ignoreNotFound,
  type Informer,
  type InformerEvent,
  isNotFound,
  objectKey,
} from "../../kube/ports.ts";
import { serviceRateLimiter } from "../../kube/queue_rate_limiters.ts";
import { type RateLimiter, runWorkers, WorkQueue } from "../../kube/work_queue.ts";
import { logger } from "../../log/logging.ts";
import { done, failed, requeueAfter, type SyncResult } from "../../kube/sync_result.ts";
import { hasCleanupFinalizer } from "./finalizer.ts";
import { currentIngress, describeIngress } from "./ingress.ts";
import { cleanupPatch, ensurePatch, type ServiceStatusPatch } from "./status_patch.ts";
import {
  type EndpointLocator,
  LOCAL_TRAFFIC_DROPPED_REASON,
  localTrafficWarning,
} from "./local_traffic.ts";
import { needsUpdate } from "./needs_update.ts";
import { syncNodeSets } from "./_node_sync.ts";
import { failureEvents } from "./failure_events.ts";
import { asLoadBalancer } from "../../cloud/load_balancer_class.ts";
import { errorMessage } from "../../log/error_message.ts";
import { serviceTarget } from "../../kube/event_targets.ts";
import {
  loadBalancerNodes,
  type NodeSetKey,
  nodeSetKey,
  NodeSetTracker,
  nodeUpdateNeedsSync,
} from "./node_set.ts";
import { type ServiceMetrics, serviceMetrics } from "./service_metrics.ts";

/** The controller's name (`--controllers`, event component). */
export const SERVICE_CONTROLLER_NAME = "service-lb-controller";

/** The event source component, as upstream's service controller. */
export const SERVICE_CONTROLLER_EVENT_COMPONENT = "service-controller";

/** How long a Service whose request cannot be met (e.g. a taken IP) waits before a new try. */
export const PENDING_RETRY_MS = 300_000;

/** The queue of Service keys (the `name` label of the workqueue metrics). */
export const SERVICE_QUEUE_NAME = "service";
/** The queue of Node-set changes, which re-sync every LoadBalancer Service. */
export const SERVICE_NODES_QUEUE_NAME = "service-nodes";

const NODE_SYNC_KEY = "nodes";
const NO_NODES_MESSAGE = "There are no available nodes for LoadBalancer";

/** What the controller talks to. */
export interface ServiceControllerDeps {
  /** The Service cache. */
  services: Informer<V1Service>;
  /** The Node cache. */
  nodes: Informer<V1Node>;
  /** Writes finalizers and status (through the status subresource). */
  writer: ClusterWriter;
  /** Records the upstream events and ours. */
  events: EventRecorder;
  /** The provider's LoadBalancer capability. */
  loadBalancer: LoadBalancer;
  /** Where the controller's and its queues' metrics are registered. */
  registry: Registry;
  /** Where endpoints run, for the `externalTrafficPolicy: Local` warning. @default none (no warning) */
  endpoints?: EndpointLocator;
}

/** How the controller behaves. */
export interface ServiceControllerOptions {
  /** `--cluster-name`, passed to every provider call. */
  clusterName: string;
  /** `--concurrent-service-syncs`: service workers and the node-sync fan-out. */
  workers: number;
  /** Whether a Service is ours: type LoadBalancer and the configured class (`handlesService`). */
  handles: (service: V1Service) => boolean;
  /** Backoff of failed syncs. @default serviceRateLimiter() (5 s doubling to 300 s) */
  rateLimiter?: RateLimiter;
  /** Delay before a Service whose request cannot be met is tried again. @default PENDING_RETRY_MS */
  pendingRetryMs?: number;
  /** Time source for the queues and latency metrics. @default systemClock() */
  clock?: Clock;
}

/** What the controller remembers of a Service it ensured (upstream's service cache). */
interface Remembered {
  service: V1Service;
  nodes: NodeSetKey;
}

/**
 * The LoadBalancer controller; `run` it while this process holds the Lease. One instance runs
 * once: build a new one on the next leader acquisition (its queues are shut down on abort).
 *
 * @example
 * ```ts ignore
 * const controller = new ServiceController(
 *   { services, nodes, writer, events, loadBalancer, registry },
 *   { clusterName: "kubernetes", workers: 1, handles: (s) => handlesService(config, s) },
 * );
 * await controller.run(leaderSignal);
 * ```
 */
export class ServiceController {
  #deps: ServiceControllerDeps;
  #options: ServiceControllerOptions;
  #clock: Clock;
  #serviceQueue: WorkQueue;
  #nodeQueue: WorkQueue;
  #metrics: ServiceMetrics;
  #remembered = new Map<string, Remembered>();
  /** While running: the node set, kept from the Node events. */
  #tracker: NodeSetTracker | undefined;
  #log = logger("controllers", "service");

  /**
   * @param deps caches, writer, recorder, provider, registry and optional endpoint locator
   * @param options cluster name, workers, class filter and timing
   */
  constructor(deps: ServiceControllerDeps, options: ServiceControllerOptions) {
    this.#deps = deps;
    this.#options = options;
    this.#clock = options.clock ?? systemClock();
    this.#serviceQueue = new WorkQueue({
      name: SERVICE_QUEUE_NAME,
      rateLimiter: options.rateLimiter ?? serviceRateLimiter(),
      registry: deps.registry,
      clock: this.#clock,
    });
    this.#nodeQueue = new WorkQueue({
      name: SERVICE_NODES_QUEUE_NAME,
      rateLimiter: options.rateLimiter ?? serviceRateLimiter(),
      registry: deps.registry,
      clock: this.#clock,
    });
    this.#metrics = serviceMetrics(deps.registry);
  }

  /**
   * Waits for the Service and Node caches, enqueues every Service (a full ensure, as upstream
   * on start and on leader acquisition), then runs the workers until `signal` aborts.
   * Nothing is synced before both caches have synced.
   * @param signal stops the controller
   * @returns resolves once every worker has stopped
   */
  async run(signal: AbortSignal): Promise<void> {
    const unsubscribe = [
      this.#deps.services.subscribe((event) => this.#onService(event)),
      this.#deps.nodes.subscribe((event) => this.#onNode(event)),
    ];
    try {
      const synced = await this.#deps.services.waitForSync(signal) &&
        await this.#deps.nodes.waitForSync(signal);
      if (!synced || signal.aborted) return;
      // from here on, each Node event updates the node set (the events before are in the list)
      const tracker = new NodeSetTracker();
      tracker.reset(this.#deps.nodes.list());
      this.#tracker = tracker;
      for (const service of this.#deps.services.list()) {
        if (this.#wantsLoadBalancer(service) || this.#mayNeedCleanup(service)) {
          this.#serviceQueue.add(objectKey(service));
        }
      }
      this.#log.info("Service controller started with {workers} workers", {
        workers: this.#options.workers,
      });
      await Promise.all([
        runWorkers(this.#serviceQueue, this.#options.workers, (key) => this.sync(key), signal),
        runWorkers(this.#nodeQueue, 1, () => this.#syncNodesAfterIo(signal), signal),
      ]);
    } finally {
      for (const stop of unsubscribe) stop();
      this.#tracker = undefined;
      this.#serviceQueue.shutDown();
      this.#nodeQueue.shutDown();
    }
  }

  /**
   * Queues every Service that wants a load balancer and has no ingress yet. Called after every
   * release; the run wiring also calls it when the pools change (a grown pool can serve them).
   */
  requeuePending(): void {
    for (const service of this.#deps.services.list()) {
      if (this.#wantsLoadBalancer(service) && currentIngress(service).length === 0) {
        this.#serviceQueue.add(objectKey(service));
      }
    }
  }

  /**
   * Queues one Service (e.g. when its EndpointSlices changed, for the Local-policy check).
   * @param key `namespace/name`
   */
  requeue(key: string): void {
    this.#serviceQueue.add(key);
  }

  /**
   * Reconciles one Service key (what a worker runs; public for tests and tools).
   * @param key `namespace/name`
   * @returns what the queue should do next
   */
  async sync(key: string): Promise<SyncResult> {
    const service = this.#deps.services.get(key);
    const remembered = this.#remembered.get(key);
    if (remembered && remembered.service.metadata?.uid !== service?.metadata?.uid) {
      // Deleted without our finalizer (stripped by hand), or deleted and recreated fast.
      const result = await this.#deleteForgotten(key, remembered.service);
      if (result.kind !== "done" || !service) return result;
    }
    if (!service) return done();
    if (this.#wantsLoadBalancer(service)) return await this.#ensure(key, service);
    if (await this.#isOursToClean(key, service)) return await this.#cleanup(key, service);
    return done();
  }

  // A Service we should have a load balancer for right now.
  #wantsLoadBalancer(service: V1Service): boolean {
    return this.#options.handles(service) && !service.metadata?.deletionTimestamp;
  }

  // Cheap, synchronous pre-filter of `#isOursToClean` for the event handlers.
  #mayNeedCleanup(service: V1Service): boolean {
    const key = objectKey(service);
    if (this.#remembered.has(key)) return !this.#wantsLoadBalancer(service);
    if (!hasCleanupFinalizer(service)) return false;
    if (service.spec?.type === "LoadBalancer") {
      return this.#options.handles(service) && !!service.metadata?.deletionTimestamp;
    }
    return true;
  }

  // Whether a Service that does not want a load balancer is one we must release. A foreign
  // class is never ours unless we ensured it in this process (the class setting changed). After
  // a type change the API server has wiped the class, so the provider is asked whether it holds
  // a load balancer for it.
  async #isOursToClean(key: string, service: V1Service): Promise<boolean> {
    if (this.#remembered.has(key)) return true;
    if (!hasCleanupFinalizer(service)) return false;
    if (service.spec?.type === "LoadBalancer") return this.#options.handles(service);
    if (this.#options.handles(asLoadBalancer(service))) return true;
    try {
      const { exists } = await this.#deps.loadBalancer.getLoadBalancer(
        this.#options.clusterName,
        service,
      );
      return exists;
    } catch (error) {
      this.#log.warn("Cannot tell whether {key} has a load balancer: {error}", { key, error });
      return false;
    }
  }

  // One write per ensure at most: the finalizer, the provider's annotations and the ingress go in
  // one status patch (upstream writes the finalizer first, before its cloud call, so a cloud load
  // balancer cannot outlive a Service deleted in between; here a Service that vanished meanwhile
  // is released through #deleteForgotten). Upstream's EnsuringLoadBalancer event is not sent:
  // EnsuredLoadBalancer or SyncLoadBalancerFailed follows it within the same sync.
  async #ensure(key: string, service: V1Service): Promise<SyncResult> {
    let status: EnsuredLoadBalancer;
    try {
      const { nodes, key: nodeKey } = this.#currentNodeSet();
      if (nodes.length === 0) {
        this.#event(service, "Warning", "UnAvailableLoadBalancer", NO_NODES_MESSAGE);
      }
      this.#remembered.set(key, { service, nodes: nodeKey });
      status = await this.#deps.loadBalancer.ensureLoadBalancer(
        this.#options.clusterName,
        service,
        nodes,
      );
      const before = currentIngress(service);
      const patch = ensurePatch(service, status);
      if (patch) {
        try {
          await this.#patchStatus(service, patch);
        } catch (error) {
          // Deleted meanwhile: its informer delete event releases what was ensured.
          if (isNotFound(error)) return done();
          throw error;
        }
      }
      this.#event(service, "Normal", "EnsuredLoadBalancer", "Ensured load balancer");
      if (patch?.status) {
        this.#log.info("Wrote ingress {ingress} of {key}", {
          key,
          ingress: describeIngress(status.ingress ?? []),
        });
        // An address this Service held may be free now (a changed request moved it).
        if (before.length > 0) this.requeuePending();
      }
    } catch (error) {
      return this.#failed(key, service, error);
    }
    this.#checkLocalTraffic(service, status);
    return done();
  }

  // One write per cleanup: ingress cleared and finalizer removed together (upstream removes the
  // finalizer, then clears the status; an address still in a status counts as taken, so both go
  // at once). Upstream's DeletingLoadBalancer event is not sent: DeletedLoadBalancer or
  // SyncLoadBalancerFailed follows it within the same sync.
  async #cleanup(key: string, service: V1Service): Promise<SyncResult> {
    const provider = this.#deps.loadBalancer;
    let released = false;
    try {
      let exists: boolean;
      try {
        ({ exists } = await provider.getLoadBalancer(this.#options.clusterName, service));
      } catch (error) {
        throw new Error(
          `failed to check if load balancer exists before cleanup: ${errorMessage(error)}`,
          { cause: error },
        );
      }
      // Upstream deletes only what Get reports, so Get must be truthful.
      if (exists) {
        await provider.ensureLoadBalancerDeleted(this.#options.clusterName, service);
        released = true;
      }
      const patch = cleanupPatch(service);
      if (patch) await ignoreNotFound(this.#patchStatus(service, patch));
    } catch (error) {
      return this.#failed(key, service, error);
    }
    this.#event(service, "Normal", "DeletedLoadBalancer", "Deleted load balancer");
    this.#remembered.delete(key);
    this.#log.info("Released the load balancer of {key}", { key, released });
    if (released) this.requeuePending();
    return done();
  }

  // Upstream's legacy path: the Service is gone (or was recreated) without passing through
  // our finalizer; release what we ensured for the old object.
  async #deleteForgotten(key: string, old: V1Service): Promise<SyncResult> {
    try {
      await this.#deps.loadBalancer.ensureLoadBalancerDeleted(this.#options.clusterName, old);
    } catch (error) {
      this.#event(
        old,
        "Warning",
        "DeleteLoadBalancerFailed",
        `Error deleting load balancer: ${errorMessage(error)}`,
      );
      return failed(error, { retriable: true });
    }
    this.#event(old, "Normal", "DeletedLoadBalancer", "Deleted load balancer");
    this.#remembered.delete(key);
    this.requeuePending();
    return done();
  }

  #failed(key: string, service: V1Service, error: unknown): SyncResult {
    for (const [reason, message] of failureEvents(key, error)) {
      this.#event(service, "Warning", reason, message);
    }
    if (error instanceof ProviderError && !error.retriable) {
      // Not retriable now, yet the Service stays pending: a release re-enqueues it at once;
      // this slow retry is the safety net.
      this.#log.warn("Service {key} stays pending: {error}", { key, error: errorMessage(error) });
      return requeueAfter(this.#options.pendingRetryMs ?? PENDING_RETRY_MS);
    }
    return failed(error, { retriable: true });
  }

  #checkLocalTraffic(service: V1Service, status: EnsuredLoadBalancer): void {
    const locator = this.#deps.endpoints;
    if (!locator) return;
    const vips = (status.ingress ?? []).flatMap((entry) => entry.ip ? [entry.ip] : []);
    const message = localTrafficWarning(service, locator, vips);
    if (message) this.#event(service, "Warning", LOCAL_TRAFFIC_DROPPED_REASON, message);
  }

  #onService(event: InformerEvent<V1Service>): void {
    const service = event.object;
    const key = objectKey(service);
    if (event.type === "delete") {
      if (this.#remembered.has(key)) this.#serviceQueue.add(key);
      if (currentIngress(event.old ?? service).length > 0) this.requeuePending();
      return;
    }
    const old = event.old;
    const changed = event.type === "add" || old === undefined
      ? this.#wantsLoadBalancer(service)
      : needsUpdate(old, service, {
        handles: this.#options.handles,
        ...(this.#deps.loadBalancer.recordAnnotations
          ? { recordAnnotations: this.#deps.loadBalancer.recordAnnotations }
          : {}),
      });
    if (changed || this.#mayNeedCleanup(service)) this.#serviceQueue.add(key);
    // Someone else's address went back to the pool: pending Services may get it now.
    if (old && currentIngress(old).length > 0 && currentIngress(service).length === 0) {
      this.requeuePending();
    }
  }

  // The eligible Nodes and their comparison key, kept from the Node events while running: with
  // thousands of Nodes, sorting them and keeping a key per Service on every ensure cost
  // O(Services * Nodes) time and memory during a burst.
  #currentNodeSet(): { nodes: V1Node[]; key: NodeSetKey } {
    if (this.#tracker) return this.#tracker.current();
    // not running (a sync called directly): from the cache as it is
    const nodes = loadBalancerNodes(this.#deps.nodes.list());
    return { nodes, key: nodeSetKey(nodes) };
  }

  #onNode(event: InformerEvent<V1Node>): void {
    this.#tracker?.apply(event.type, event.object);
    if (event.type !== "update" || !event.old || nodeUpdateNeedsSync(event.old, event.object)) {
      this.#nodeQueue.add(NODE_SYNC_KEY);
    }
  }

  /**
   * The node-set pass, one event-loop turn late. A Node event wakes this worker and the
   * cloud-node controller's in the same microtask batch; upstream runs them on separate
   * goroutines, here they share one thread, and the pass would run (synchronously, up to its
   * first write) before the node controller's initialization PUT has left. Yielding once lets
   * that PUT go first; the pass itself is unchanged.
   */
  async #syncNodesAfterIo(signal: AbortSignal): Promise<SyncResult> {
    await new Promise((resolve) => setTimeout(resolve, 0));
    if (signal.aborted) return done();
    return await this.#syncNodes();
  }

  #syncNodes(): Promise<SyncResult> {
    return syncNodeSets({
      clusterName: this.#options.clusterName,
      workers: this.#options.workers,
      nodeSet: this.#currentNodeSet(),
      remembered: this.#remembered,
      current: (key) => {
        const service = this.#deps.services.get(key);
        return service && this.#wantsLoadBalancer(service) ? service : undefined;
      },
      loadBalancer: this.#deps.loadBalancer,
      event: (service, type, reason, message) => this.#event(service, type, reason, message),
      retry: (key) => this.#serviceQueue.add(key),
      metrics: this.#metrics,
      clock: this.#clock,
    });
  }

  #patchStatus(service: V1Service, patch: ServiceStatusPatch): Promise<V1Service> {
    const { namespace = "", name = "" } = service.metadata ?? {};
    return this.#deps.writer.patchServiceStatus(namespace, name, patch, "strategic");
  }

  #event(
    service: V1Service,
    type: "Normal" | "Warning",
    reason: string,
    message: string,
  ): void {
    this.#deps.events.event(serviceTarget(service), type, reason, message);
  }
}
