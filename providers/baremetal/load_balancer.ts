/**
 * The bare-metal LoadBalancer capability: VIPs from the inventory's pools, written by the service
 * controller into `status.loadBalancer.ingress` and served by keepalived on the control-plane
 * hosts. The Kubernetes API is the only state: before every decision the allocator is brought in
 * line with the Services' statuses (`allocation_mirror.ts`). Pool usage goes out as one metric
 * family (`ipam/pool_usage_metrics.ts`) and, through `poolUsage`, into this host's heartbeat.
 *
 * @example
 * ```ts
 * import { ConfigSchema } from "../../src/config/schema.ts";
 * import { createLoadBalancer } from "./load_balancer.ts";
 *
 * const config = ConfigSchema.parse({ pools: [{ name: "lan", addresses: ["10.0.0.1-10.0.0.9"] }] });
 * const services = { get: () => undefined, list: () => [] };
 * const lb = createLoadBalancer({ config: () => config, services });
 * const service = { metadata: { name: "web", namespace: "shop" }, spec: { type: "LoadBalancer" } };
 * const status = await lb.ensureLoadBalancer("kubernetes", service, []);
 * // status.ingress: [{ ip: "10.0.0.1", ipMode: "VIP" }]
 * ```
 *
 * @module
 */
import type { V1LoadBalancerStatus, V1Node, V1Service } from "@kubernetes/client-node";
import type { Registry } from "prom-client";
import { registerPoolUsageGauges } from "./ipam/pool_usage_metrics.ts";
import {
  type EnsuredLoadBalancer,
  type LoadBalancer,
  type PoolUsage,
  ProviderError,
} from "../../src/cloud/provider.ts";
import type { Config } from "../../src/config/types.ts";
import { type Lister, objectKey } from "../../src/kube/ports.ts";
import { logger } from "../../src/log/logging.ts";
import { canonicalIp } from "../../src/net/ip.ts";
import { matchesClass } from "../../src/cloud/load_balancer_class.ts";
import { compareCodeUnits } from "../../src/text/code_unit_order.ts";
import { AllocationMirror } from "./allocation_mirror.ts";
import type { AllocationFailure, Allocator, OrphanedAllocation } from "./ipam/allocator.ts";
import { ANNOTATIONS, readServiceRequest } from "./ipam/service_requests.ts";
import { ingressIps } from "./ipam/status_holdings.ts";
import { addressOwner } from "./ipam/address_owner.ts";
import { poolServers } from "../../src/config/pool_serving.ts";

/** Failures another Service's release or a pool change can cure; the others need a user edit. */
const RETRIABLE: ReadonlySet<AllocationFailure> = new Set(["AddressInUse", "PoolExhausted"]);

/** An allocation the user must fix or wait for; `reason` goes into an `AllocationFailed` event. */
export class AllocationError extends ProviderError {
  /** Machine-readable reason, e.g. `PoolExhausted`. */
  declare readonly reason: AllocationFailure;
  /**
   * @param reason the allocator's reason
   * @param message the allocator's sentence, quoting the values
   */
  constructor(reason: AllocationFailure, message: string) {
    super(message, { retriable: RETRIABLE.has(reason), reason });
    this.name = "AllocationError";
  }
}

/** Options of `createLoadBalancer`. */
export interface LoadBalancerOptions {
  /** The configuration in force (re-read on every call; reloads take effect at once). */
  config: () => Config;
  /** Every Service of the cluster, or a getter for it once the informer exists. */
  services: Lister<V1Service> | (() => Lister<V1Service> | undefined);
  /** Whether the Service cache has synced; nothing is allocated before. @default always true */
  hasSynced?: () => boolean;
  /** Where the pool usage gauges (`pool_usage_metrics.ts`) are registered. @default not exported */
  registry?: Registry;
}

/** The capability plus what callers need for Warning events. */
export interface BaremetalLoadBalancer extends LoadBalancer {
  /**
   * Addresses Services keep although no pool offers them any more, for Warning events; rebuilt
   * from the configuration and Services in force first (when the cache has synced).
   */
  orphanedAllocations(): OrphanedAllocation[];
  /** Usage per pool and family, rebuilt first (when the cache has synced), sorted. */
  poolUsage(): PoolUsage[];
  /** The current allocator (read-only use: stats, inUse), rebuilt at the last call. */
  readonly allocator: Allocator;
  /** The hosts of the pools that hold the addresses (`served_by`), sorted. */
  servingHosts(addresses: readonly string[]): string[];
}

/**
 * Builds the LoadBalancer capability of the bare-metal provider.
 * @param options configuration source, Service lister, metrics registry
 * @returns the capability
 */
export function createLoadBalancer(options: LoadBalancerOptions): BaremetalLoadBalancer {
  const log = logger("provider", "load-balancer");
  const mirror = new AllocationMirror();
  const allocator = mirror.allocator;

  /** The Service cache once it has synced, else undefined. */
  const syncedServices = (): Lister<V1Service> | undefined => {
    const lister = typeof options.services === "function" ? options.services() : options.services;
    if (!lister || (options.hasSynced && !options.hasSynced())) return undefined;
    return lister;
  };
  const cache = (): Lister<V1Service> => {
    const lister = syncedServices();
    if (!lister) {
      throw new ProviderError("Cannot allocate addresses yet: the Service cache has not synced", {
        retriable: true,
      });
    }
    return lister;
  };

  /**
   * Brings the mirror in line with the configuration and Services in force. Before the cache has
   * synced it keeps what it last knew; any other failure is thrown.
   */
  const refresh = (): void => {
    const services = syncedServices();
    if (services) mirror.sync(options.config(), services);
  };

  /** Usage per pool and family now, sorted (pool, then family). */
  const poolUsage = (): PoolUsage[] => {
    refresh();
    return allocator.stats().map((s) => ({
      pool: s.pool,
      family: s.family === 6 ? "IPv6" as const : "IPv4" as const,
      total: Number(s.total),
      used: s.used,
    })).sort((a, b) => compareCodeUnits(a.pool, b.pool) || compareCodeUnits(a.family, b.family));
  };

  if (options.registry) {
    registerPoolUsageGauges(options.registry, () => {
      refresh();
      return allocator.stats();
    });
  }

  /** Allocates (or confirms) the Service's addresses; throws AllocationError when it cannot. */
  const ensure = (service: V1Service): EnsuredLoadBalancer => {
    const config = options.config();
    const key = objectKey(service);
    mirror.sync(config, cache());
    const request = readServiceRequest(service);
    if (!request.ok) throw new AllocationError(request.reason, request.message);
    const result = allocator.assign(key, request.request);
    if (!result.ok) throw new AllocationError(result.reason, result.message);
    mirror.assigned(key, result.ips, ingressIps(service).map((ip) => canonicalIp(ip) ?? ip));
    log.info("Service {key} holds {ips} from pool {pool}", {
      key,
      ips: result.ips.join(","),
      pool: result.pool,
      event: "IPAllocated",
    });
    const ensured: EnsuredLoadBalancer = {
      ingress: result.ips.map((ip) => ({ ip, ipMode: "VIP" })),
    };
    // recorded by the controller in the same request as the ingress
    if (result.pool !== "") {
      ensured.serviceAnnotations = { [ANNOTATIONS.allocatedFromPool]: result.pool };
    }
    return ensured;
  };

  const lb: BaremetalLoadBalancer = {
    allocator,
    getLoadBalancerName(_clusterName: string, service: V1Service): string {
      return `a${(service.metadata?.uid ?? "").replaceAll("-", "")}`.slice(0, 32);
    },

    getLoadBalancer(_clusterName: string, service: V1Service) {
      const config = options.config();
      const exists = matchesClass(config, service) && ingressIps(service).length > 0;
      const status: V1LoadBalancerStatus = exists
        ? structuredClone(service.status!.loadBalancer!)
        : {};
      return Promise.resolve({ status, exists });
    },

    ensureLoadBalancer(_clusterName: string, service: V1Service, _nodes: V1Node[]) {
      try {
        return Promise.resolve(ensure(service));
      } catch (error) {
        return Promise.reject(error);
      }
    },

    updateLoadBalancer(): Promise<void> {
      // backends are kube-proxy's business and VIP placement is keepalived's: nothing to do
      return Promise.resolve();
    },

    ensureLoadBalancerDeleted(_clusterName: string, service: V1Service): Promise<void> {
      mirror.forget(objectKey(service));
      return Promise.resolve();
    },

    servingHosts(addresses: readonly string[]): string[] {
      // the hosts of the pools that hold them (`served_by`), whatever their state: where the
      // VIPs are meant to land, which is what kube-proxy's Local policy is judged against
      const config = options.config();
      const hosts = new Set<string>();
      for (const address of addresses) {
        const owner = addressOwner(config, address);
        const pool = owner === undefined ? undefined : config.pools[owner.index];
        for (const machine of pool ? poolServers(config, pool) : []) hosts.add(machine.name);
      }
      return [...hosts].sort(compareCodeUnits);
    },

    orphanedAllocations(): OrphanedAllocation[] {
      refresh();
      return allocator.orphanedAllocations();
    },

    poolUsage,
    recordAnnotations: [ANNOTATIONS.allocatedFromPool],
  };
  return lb;
}
