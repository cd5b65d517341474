/**
 * Test harness of the service controller: the shared fake cluster with the real API server's
 * Service status-subresource and deletion semantics, a fake LoadBalancer with a tiny allocator,
 * and a running controller on a fake clock.
 *
 * @module
 */
import type { V1LoadBalancerStatus, V1Node, V1Service } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { type LoadBalancer, ProviderError } from "../../../../src/cloud/provider.ts";
import { objectKey, type PatchType } from "../../../../src/kube/ports.ts";
import { itemExponentialRateLimiter } from "../../../../src/kube/queue_rate_limiters.ts";
import {
  ServiceController,
  type ServiceControllerOptions,
} from "../../../../src/controllers/service/service_controller.ts";
import type { EndpointLocator } from "../../../../src/controllers/service/local_traffic.ts";
import { FakeCluster } from "../../_fakes/fake_cluster.ts";
import { FakeClock } from "../../_fakes/fake_clock.ts";
import { RecordingEventRecorder } from "../../_fakes/recording_event_recorder.ts";
import { turns } from "../../../_support/poll.ts";

/**
 * The fake cluster plus what the real API server does for Services: a `services/status` patch
 * also applies metadata (the Service status strategy resets only spec; the shared fake does
 * that), and a delete waits for the finalizers to go. Every write and provider call lands in
 * `log` in order.
 */
export class ServiceCluster extends FakeCluster {
  /**
   * Ordered log: one `status ns/name: <what>` per status patch, where `<what>` lists
   * `finalizer+`, `finalizer-`, `annotations`, `ingress` or `ingress-` (cleared); provider calls.
   */
  readonly log: string[] = [];

  /** Deletes a Service as a client would: sets deletionTimestamp while finalizers remain. */
  deleteService(key: string): void {
    const service = this.services.get(key);
    if (!service) throw new Error(`no service ${key}`);
    if ((service.metadata?.finalizers ?? []).length === 0) {
      this.services.remove(key);
      return;
    }
    service.metadata = { ...service.metadata, deletionTimestamp: new Date(0) };
    this.addService(service);
  }

  /** Edits a Service as another client would (notifies the informer). */
  editService(key: string, mutate: (service: V1Service) => void): void {
    const service = this.services.get(key);
    if (!service) throw new Error(`no service ${key}`);
    mutate(service);
    this.addService(service);
  }

  override async patchServiceStatus(
    namespace: string,
    name: string,
    patch: unknown,
    type: PatchType,
  ): Promise<V1Service> {
    const key = `${namespace}/${name}`;
    this.log.push(`status ${key}: ${describeStatusPatch(patch)}`);
    const result = await super.patchServiceStatus(namespace, name, patch, type);
    const current = this.services.get(key);
    if (current?.metadata?.deletionTimestamp && (current.metadata.finalizers ?? []).length === 0) {
      this.services.remove(key);
    }
    return result;
  }
}

/** What a status patch carries, e.g. `finalizer+ annotations ingress`. */
function describeStatusPatch(patch: unknown): string {
  const { metadata = {}, status } = patch as {
    metadata?: Record<string, unknown>;
    status?: { loadBalancer?: { ingress?: unknown } };
  };
  const parts: string[] = [];
  if ("finalizers" in metadata) parts.push("finalizer+");
  if ("$deleteFromPrimitiveList/finalizers" in metadata) parts.push("finalizer-");
  if ("annotations" in metadata) parts.push("annotations");
  if (status?.loadBalancer) parts.push(status.loadBalancer.ingress ? "ingress" : "ingress-");
  return parts.join(" ");
}

/** A LoadBalancer allocating from a fixed list; `spec.loadBalancerIP` requests one address. */
export class FakeLoadBalancer implements LoadBalancer {
  /** service key → address */
  readonly allocations = new Map<string, string>();
  /** Errors thrown by the next ensure calls (FIFO). */
  readonly failNext: Error[] = [];
  updates = 0;
  #free: string[];
  #log: string[];

  constructor(addresses: string[], log: string[]) {
    this.#free = [...addresses];
    this.#log = log;
  }

  getLoadBalancer(
    _clusterName: string,
    service: V1Service,
  ): Promise<{ status: V1LoadBalancerStatus; exists: boolean }> {
    const ip = this.allocations.get(objectKey(service));
    return Promise.resolve({ status: statusOf(ip), exists: ip !== undefined });
  }
  getLoadBalancerName(_clusterName: string, service: V1Service): string {
    return `a${(service.metadata?.uid ?? "").replaceAll("-", "")}`.slice(0, 32);
  }
  ensureLoadBalancer(
    _clusterName: string,
    service: V1Service,
    _nodes: V1Node[],
  ): Promise<V1LoadBalancerStatus> {
    const key = objectKey(service);
    this.#log.push(`ensure ${key}`);
    const error = this.failNext.shift();
    if (error) return Promise.reject(error);
    const requested = service.spec?.loadBalancerIP;
    const held = this.allocations.get(key);
    if (held && (!requested || requested === held)) return Promise.resolve(statusOf(held));
    if (requested) {
      const owner = [...this.allocations].find(([, ip]) => ip === requested)?.[0];
      if (owner) {
        const reason = `address "${requested}" is in use by service "${owner}"`;
        return Promise.reject(
          Object.assign(new ProviderError(reason, { retriable: false }), { reason }),
        );
      }
      if (held) this.#free.push(held);
      this.#free = this.#free.filter((ip) => ip !== requested);
      this.allocations.set(key, requested);
      return Promise.resolve(statusOf(requested));
    }
    const ip = this.#free.shift();
    if (!ip) {
      const reason = "no free addresses";
      return Promise.reject(
        Object.assign(new ProviderError(reason, { retriable: false }), { reason }),
      );
    }
    this.allocations.set(key, ip);
    return Promise.resolve(statusOf(ip));
  }
  updateLoadBalancer(_clusterName: string, _service: V1Service, _nodes: V1Node[]): Promise<void> {
    this.updates++;
    return Promise.resolve();
  }
  ensureLoadBalancerDeleted(_clusterName: string, service: V1Service): Promise<void> {
    const key = objectKey(service);
    this.#log.push(`delete ${key}`);
    const ip = this.allocations.get(key);
    if (ip) {
      this.allocations.delete(key);
      this.#free.push(ip);
    }
    return Promise.resolve();
  }
}

function statusOf(ip: string | undefined): V1LoadBalancerStatus {
  return ip ? { ingress: [{ ip, ipMode: "VIP" }] } : {};
}

/** A LoadBalancer Service; `class` sets spec.loadBalancerClass. */
export function lbService(
  name: string,
  extra: { class?: string; ip?: string; uid?: string; namespace?: string } = {},
): V1Service {
  const service: V1Service = {
    metadata: { name, namespace: extra.namespace ?? "default", uid: extra.uid ?? `uid-${name}` },
    spec: { type: "LoadBalancer", ports: [{ port: 80, protocol: "TCP", nodePort: 30080 }] },
  };
  if (extra.class) service.spec!.loadBalancerClass = extra.class;
  if (extra.ip) service.spec!.loadBalancerIP = extra.ip;
  return service;
}

/** Our class filter as the ipam helper's `handlesService` defines it (default_class on). */
export function handlesDefault(service: V1Service): boolean {
  const cls = service.spec?.loadBalancerClass;
  return service.spec?.type === "LoadBalancer" && (cls === undefined || cls === "keelson.io/vip");
}

/** A controller running over `cluster` until `stop()`. */
export interface Running {
  controller: ServiceController;
  events: RecordingEventRecorder;
  clock: FakeClock;
  registry: Registry;
  stop(): Promise<void>;
}

/** Options of `startController`. */
export interface StartOptions {
  handles?: (service: V1Service) => boolean;
  endpoints?: EndpointLocator;
  loadBalancer?: LoadBalancer;
  options?: Partial<ServiceControllerOptions>;
}

/**
 * Starts a controller (backoff 1 s..10 s on a fake clock) and lets it settle.
 * @param cluster the fake cluster
 * @param loadBalancer the provider
 */
export async function startController(
  cluster: ServiceCluster,
  loadBalancer: LoadBalancer,
  start: StartOptions = {},
): Promise<Running> {
  const events = new RecordingEventRecorder();
  const clock = new FakeClock();
  const registry = new Registry();
  const controller = new ServiceController(
    {
      services: cluster.services,
      nodes: cluster.nodes,
      writer: cluster,
      events,
      loadBalancer,
      registry,
      ...(start.endpoints ? { endpoints: start.endpoints } : {}),
    },
    {
      clusterName: "test",
      workers: 2,
      handles: start.handles ?? handlesDefault,
      rateLimiter: itemExponentialRateLimiter(1_000, 10_000),
      clock,
      ...start.options,
    },
  );
  const abort = new AbortController();
  const running = controller.run(abort.signal);
  await settle();
  return {
    controller,
    events,
    clock,
    registry,
    async stop() {
      abort.abort();
      await running;
    },
  };
}

/** Lets queued work and promise chains run (everything in the fakes resolves at once). */
export async function settle(rounds = 20): Promise<void> {
  await turns(rounds);
}

/** The ingress IPs of a Service in the cluster. */
export function ingressOf(cluster: FakeCluster, key: string): string[] {
  return (cluster.services.get(key)?.status?.loadBalancer?.ingress ?? []).map((i) => i.ip ?? "");
}
