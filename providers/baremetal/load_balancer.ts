/**
 * The bare-metal LoadBalancer capability: VIPs from the inventory's pools, written by the service
 * controller into `status.loadBalancer.ingress` and served by keepalived on the control-plane
 * hosts. The Kubernetes API is the only state: before every decision the allocator is rebuilt
 * from the Services' statuses (plus the addresses this process handed out whose status write has
 * not been seen yet, so two Services never get one address in the window between the two).
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
import { Gauge, type Registry } from "prom-client";
import { registerPoolUsageGauges } from "./ipam/pool_usage_metrics.ts";
import {
  type EnsuredLoadBalancer,
  type LoadBalancer,
  ProviderError,
} from "../../src/cloud/provider.ts";
import type { Config } from "../../src/config/types.ts";
import { type Informer, type Lister, objectKey } from "../../src/kube/ports.ts";
import { logger } from "../../src/log/logging.ts";
import { canonicalIp } from "../../src/net/ip.ts";
import { matchesClass } from "../../src/cloud/load_balancer_class.ts";
import { type AllocationFailure, Allocator, type OrphanedAllocation } from "./ipam/allocator.ts";
import { buildPools } from "./ipam/pools.ts";
import { sameAddresses } from "./ipam/same_addresses.ts";
import { ANNOTATIONS, readServiceRequest } from "./ipam/service_requests.ts";
import { ingressIps, statusHolding } from "./ipam/status_holdings.ts";

/** The pool-usage gauge's name. */
export const POOL_ADDRESSES_METRIC = "keelson_pool_addresses";

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
  /** Where `keelson_pool_addresses` is registered. @default not exported */
  registry?: Registry;
}

/** The capability plus what callers need for Warning events. */
export interface BaremetalLoadBalancer extends LoadBalancer {
  /**
   * Addresses Services keep although no pool offers them any more, for Warning events; rebuilt
   * from the configuration and Services in force first (when the cache has synced).
   */
  orphanedAllocations(): OrphanedAllocation[];
  /** The current allocator (read-only use: stats, inUse), rebuilt at the last call. */
  readonly allocator: Allocator;
}

/**
 * Builds the LoadBalancer capability of the bare-metal provider.
 * @param options configuration source, Service lister, metrics registry
 * @returns the capability
 */
export function createLoadBalancer(options: LoadBalancerOptions): BaremetalLoadBalancer {
  const log = logger("provider", "load-balancer");
  const allocator = new Allocator();
  /** Addresses returned by ensure whose status write has not been seen in the lister yet. */
  const pending = new Map<string, string[]>();
  let lastConfig: Config | undefined;
  const reported = new Set<string>();

  const cache = (): Lister<V1Service> => {
    const lister = typeof options.services === "function" ? options.services() : options.services;
    if (!lister || (options.hasSynced && !options.hasSynced())) {
      throw new ProviderError("Cannot allocate addresses yet: the Service cache has not synced", {
        retriable: true,
      });
    }
    return lister;
  };

  /** Which object each Service's allocation was last restored from (and with which pending). */
  const restored = new Map<string, { object: V1Service; extra: string }>();

  // When the cache is an informer, the keys of the Services that changed since the last rebuild
  // (undefined: a plain lister, every rebuild is a full pass).
  let changed: Set<string> | undefined;
  let followed: Lister<V1Service> | undefined;
  let unfollow: (() => void) | undefined;
  let fullPassDue = true;
  const follow = (lister: Lister<V1Service>): void => {
    if (lister === followed) return;
    unfollow?.();
    followed = lister;
    fullPassDue = true;
    const informer = lister as Partial<Informer<V1Service>>;
    if (typeof informer.subscribe === "function") {
      const keys = new Set<string>();
      unfollow = informer.subscribe((event) => keys.add(objectKey(event.object)));
      changed = keys;
    } else {
      unfollow = undefined;
      changed = undefined;
    }
  };

  // Rebuilding is incremental: with an informer only the Services that changed since the last
  // call (and those with pending addresses) are looked at, so an ensure costs O(changes), not
  // O(Services) (a burst of N Services was O(N²)); a Service whose object and pending addresses
  // are the same as last time is not restored again. A full pass runs after a reload, with a
  // plain lister, and for the gauge.
  const rebuild = (config: Config, lister: Lister<V1Service>, full = false): void => {
    follow(lister);
    let reconfigured = false;
    const touched: string[] = [];
    if (config !== lastConfig) {
      lastConfig = config;
      allocator.setPools(buildPools(config.pools));
      restored.clear();
      reconfigured = true;
    }
    if (reconfigured || full || fullPassDue || !changed) {
      const live = new Map(lister.list().map((s) => [objectKey(s), s]));
      const keys = new Set([...pending.keys(), ...restored.keys(), ...live.keys()]);
      for (const key of keys) refreshOne(config, key, live.get(key), touched);
      fullPassDue = false;
    } else {
      for (const key of new Set([...changed, ...pending.keys()])) {
        refreshOne(config, key, lister.get(key), touched);
      }
    }
    changed?.clear();
    // a full pass after a reload; otherwise only the Services restored just now
    if (reconfigured) reported.clear();
    const orphans = reconfigured
      ? allocator.orphanedAllocations()
      : touched.flatMap((key) => allocator.orphanedAllocations(key));
    reportOrphans(orphans);
  };

  /** Brings one Service's allocation in line with the cache (and its pending addresses). */
  const refreshOne = (
    config: Config,
    key: string,
    service: V1Service | undefined,
    touched: string[],
  ): void => {
    const ips = pending.get(key);
    if (ips) {
      const gone = !service || Boolean(service.metadata?.deletionTimestamp) ||
        !matchesClass(config, service);
      const shown = service ? ingressIps(service).map((ip) => canonicalIp(ip) ?? ip) : [];
      if (gone || sameAddresses(shown, ips)) pending.delete(key);
    }
    if (!service) {
      // every allocation was restored (tracked) or assigned (pending, pruned above)
      allocator.release(key);
      restored.delete(key);
      return;
    }
    const extra = pending.get(key) ?? [];
    const memo = restored.get(key);
    if (memo && memo.object === service && memo.extra === extra.join(",")) return;
    touched.push(key);
    restored.set(key, { object: service, extra: extra.join(",") });
    const holding = statusHolding(config, service);
    if (holding) {
      // until the status shows the new addresses, the Service holds both old and new
      allocator.restore(key, [...holding.ips, ...extra], holding.options);
    } else if (extra.length > 0) {
      const request = readServiceRequest(service);
      allocator.restore(key, extra, {
        sharing: request.ok ? request.request.sharing : undefined,
      });
    } else {
      allocator.release(key);
    }
  };

  /** Logs each orphaned address once (per reload). */
  const reportOrphans = (orphans: readonly OrphanedAllocation[]): void => {
    for (const o of orphans) {
      const id = `${o.serviceKey} ${o.ip}`;
      if (reported.has(id)) continue;
      reported.add(id);
      log.warn("Service {key} keeps {ip}, which no pool offers any more ({why})", {
        key: o.serviceKey,
        ip: o.ip,
        why: o.why,
        pool: o.pool,
      });
    }
  };

  /** Rebuilds from the configuration and all Services in force, when the cache has synced. */
  const refresh = (): void => {
    try {
      rebuild(options.config(), cache(), true);
    } catch {
      // not synced yet: report what the allocator last knew
    }
  };

  if (options.registry) registerPoolGauge(options.registry, allocator, refresh);

  /** Allocates (or confirms) the Service's addresses; throws AllocationError when it cannot. */
  const ensure = (service: V1Service): EnsuredLoadBalancer => {
    const config = options.config();
    const key = objectKey(service);
    rebuild(config, cache());
    const request = readServiceRequest(service);
    if (!request.ok) throw new AllocationError(request.reason, request.message);
    const result = allocator.assign(key, request.request);
    if (!result.ok) throw new AllocationError(result.reason, result.message);
    const shown = ingressIps(service).map((ip) => canonicalIp(ip) ?? ip);
    if (sameAddresses(shown, result.ips)) pending.delete(key);
    else pending.set(key, result.ips);
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
      const key = objectKey(service);
      pending.delete(key);
      allocator.release(key);
      // the status may still show the addresses until the controller clears it: re-read it
      restored.delete(key);
      changed?.add(key);
      return Promise.resolve();
    },

    orphanedAllocations(): OrphanedAllocation[] {
      refresh();
      return allocator.orphanedAllocations();
    },
  };
  return lb;
}

function registerPoolGauge(registry: Registry, allocator: Allocator, refresh: () => void): void {
  // a reload may build a new load balancer against the same registry: the newest one reports
  registry.removeSingleMetric(POOL_ADDRESSES_METRIC);
  registerPoolUsageGauges(registry, () => {
    refresh();
    return allocator.stats();
  });
  new Gauge({
    name: POOL_ADDRESSES_METRIC,
    help: "Addresses of each load-balancer pool and family: total usable, and used by Services.",
    labelNames: ["pool", "family", "state"],
    registers: [registry],
    collect() {
      refresh();
      this.reset();
      for (const s of allocator.stats()) {
        const labels = { pool: s.pool, family: `IPv${s.family}` };
        this.set({ ...labels, state: "total" }, Number(s.total));
        this.set({ ...labels, state: "used" }, s.used);
      }
    },
  });
}
