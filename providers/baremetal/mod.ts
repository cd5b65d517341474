/**
 * The built-in bare-metal provider, and its registry entry: machines from the TOML inventory
 * (InstancesV2), VIPs from the inventory's pools (LoadBalancer, `load_balancer.ts`), and the host
 * side that announces them from this host (`host_side.ts`: keepalived and BIRD, through the
 * announcer contract of `host_announcer.ts`). Everything outside `providers/` reaches the
 * provider through this file, and then only through the contract (`src/cloud/provider.ts`):
 * reload validation, `keelson render` and `keelson plan` are its hooks.
 *
 * @example
 * ```ts
 * const registry = new ProviderRegistry();
 * registerBaremetal(registry, { inventory: () => ({ config: current, healthy }), metrics });
 * const provider = registry.create(config);
 * ```
 *
 * @module
 */
import { applyHostConfig, type HostDaemon } from "./host_apply/apply_host_config.ts";
import { serveHostReaders } from "./host_apply/host_readers.ts";
import type { V1Node, V1Service } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import {
  type CloudProvider,
  type LoadBalancer,
  ProviderError,
  type Route,
  type Routes,
} from "../../src/cloud/provider.ts";
import { reportedRoutes } from "./bird/reported_routes.ts";
import { decidePodRoutes, type PodRouteDecision } from "./bird/decide_pod_routes.ts";
import type { ProviderInputs, ProviderRegistry } from "../../src/cloud/registry.ts";
import type { Config } from "../../src/config/types.ts";
import {
  type EventRecorder,
  type Informer,
  type InformerEvent,
  type Lister,
  objectKey,
} from "../../src/kube/ports.ts";
import { ANNOUNCERS, type HostSide, startHostSide } from "./host_side.ts";
import { BaremetalInstances, type InventorySource } from "./instances.ts";
import { planAllocations } from "./ipam/plan_allocations.ts";
import { createLoadBalancer } from "./load_balancer.ts";
import { reportOrphanedAddresses } from "./orphaned_addresses.ts";
import { strandedAddressIssues } from "./stranded_addresses.ts";
import { UnservedAddressReporter } from "./unserved_addresses.ts";
import { type BaremetalPower, createBaremetalPower } from "./power/power_control.ts";

/** The registry name and providerID scheme. */
export const BAREMETAL_PROVIDER_NAME = "baremetal";

/** Options of `createBaremetalProvider`. */
export interface BaremetalProviderOptions {
  /** The LoadBalancer capability (built from the same inventory). @default none */
  loadBalancer?: LoadBalancer;
  /** The Routes capability (pod CIDRs over BIRD). @default none */
  routes?: Routes;
  /** Machine power from the BMCs (`power/power_control.ts`). @default none */
  power?: BaremetalPower;
}

/**
 * Builds the bare-metal provider's inventory part (no host side, no hooks): what controller
 * tests use; the commands build the full provider through the registry.
 * @param inventory returns the configuration in force and whether it is usable
 * @param options optional capabilities
 * @returns the provider, with `instancesV2` and, when given, `loadBalancer`
 */
export function createBaremetalProvider(
  inventory: InventorySource,
  options: BaremetalProviderOptions = {},
): CloudProvider & { instancesV2: BaremetalInstances } {
  const instancesV2 = new BaremetalInstances(inventory, options.power?.confirmedOff);
  const provider: CloudProvider & { instancesV2: BaremetalInstances } = {
    providerName: BAREMETAL_PROVIDER_NAME,
    hasClusterID: () => true,
    instancesV2,
    // the Nodes tell which machines are taken, so no Node gets a machine another Node holds
    initialize: (context) => {
      instancesV2.useNodes(() => context.nodes.list());
      return Promise.resolve();
    },
  };
  return {
    ...provider,
    ...(options.loadBalancer ? { loadBalancer: options.loadBalancer } : {}),
    ...(options.routes ? { routes: options.routes } : {}),
    ...(options.power ? { power: options.power.control((n) => instancesV2.findMachine(n)) } : {}),
  };
}

/** Options of `registerBaremetal`: the live inventory (reloads, health) and the metrics. */
export type RegisterBaremetalOptions = ProviderInputs;

/**
 * Registers the provider under `baremetal`. The provider it builds has every capability and
 * lifecycle hook: InstancesV2, LoadBalancer, the host side (`startHost`), and the Service cache
 * once connected.
 * @param registry the process's registry
 * @param options the live inventory source and the metrics registry
 * @throws {Error} when `baremetal` is already registered
 */
export function registerBaremetal(
  registry: ProviderRegistry,
  options: RegisterBaremetalOptions = {},
): void {
  registry.register(BAREMETAL_PROVIDER_NAME, (config: Config) => {
    const inventory = options.inventory ?? (() => ({ config, healthy: true }));
    return createFullProvider(inventory, options.metrics);
  });
}

function createFullProvider(inventory: InventorySource, metrics: Registry = new Registry()) {
  const current = () => inventory().config;
  // filled in by the lifecycle hooks: connect (every host), initialize (the leader)
  const cluster: { services?: Informer<V1Service> } = {};
  let events: EventRecorder | undefined;
  let hostSide: HostSide | undefined;
  // while leading: the pod routes other hosts report announced (their heartbeats)
  let reported: (() => Route[]) | undefined;
  /** The pod-route decision over the Node cache (why a route is refused), once leading. */
  let decided: (() => PodRouteDecision) | undefined;
  // the decision is asked at every poll of every route waiting for a heartbeat: kept until a Node
  // event or a reload changes its inputs (only once connected, when the events are seen)
  let nodesVersion: number | undefined;
  let decisionMemo: { config: Config; version: number; decision: PodRouteDecision } | undefined;
  const podDecision = (nodes: Lister<V1Node>): PodRouteDecision => {
    const config = current();
    const version = nodesVersion;
    if (
      version !== undefined && decisionMemo?.config === config && decisionMemo.version === version
    ) {
      return decisionMemo.decision;
    }
    const decision = decidePodRoutes({ config, nodes: nodes.list() });
    decisionMemo = version === undefined ? undefined : { config, version, decision };
    return decision;
  };
  const loadBalancer = createLoadBalancer({
    config: current,
    services: () => cluster.services,
    hasSynced: () => cluster.services?.hasSynced() ?? false,
    registry: metrics,
  });
  // Routes: pod CIDRs over BIRD, answered from this host's BIRD once the host side runs
  const routesPodCidrs = (config: Config) => config.bgp?.peers.some((p) => p.pod_cidrs) ?? false;
  const routes = routesPodCidrs(current())
    ? hostRoutes(() => hostSide?.routes, () => reported, () => decided)
    : undefined;
  // host events and the Node cache, once connected: the power part's Warnings go on Nodes
  let hostEvents: EventRecorder | undefined;
  let nodeCache: Informer<V1Node> | undefined;
  const power = createBaremetalPower(current, metrics, {
    events: () => hostEvents,
    nodeOf: (machine) =>
      nodeCache?.list().find((node) => {
        try {
          return base.instancesV2.findMachine(node)?.name === machine.name;
        } catch {
          return false;
        }
      }),
  });
  const base = createBaremetalProvider(inventory, {
    loadBalancer,
    power,
    ...(routes ? { routes } : {}),
  });
  // the leader's Warning Events for Service addresses keepalived will not serve
  const unserved = new UnservedAddressReporter();
  const reportUnserved = (event?: InformerEvent<V1Service>): void => {
    const services = cluster.services;
    if (!services?.hasSynced()) return;
    const key = event ? objectKey(event.object) : undefined;
    unserved.schedule(() => ({ config: current(), services }), () => events, key);
  };
  const provider: CloudProvider = {
    ...base,
    poolUsage: () => loadBalancer.poolUsage(),
    machinePower: () => power.monitor.observed(),
    async startHost({ host, signal }) {
      hostSide = await startHostSide({
        config: current,
        host,
        registry: metrics,
        signal,
        reportedRoutes: () => reported?.() ?? [],
      });
      return hostSide;
    },
    connect(context) {
      const { nodes, services, signal } = context;
      cluster.services = services;
      hostEvents = context.events;
      nodeCache = nodes;
      // the Nodes tell which machines are taken (machine identity)
      base.instancesV2.useNodes(() => nodes.list(), { notifies: true });
      nodesVersion = 0;
      const nodesChanged = nodes.subscribe((event) => {
        nodesVersion = (nodesVersion ?? 0) + 1;
        base.instancesV2.nodesChanged(event);
      });
      signal.addEventListener("abort", () => {
        nodesChanged();
        nodesVersion = undefined;
        hostEvents = undefined;
        nodeCache = undefined;
      }, { once: true });
      hostSide?.connect(context);
      const unsubscribe = services.subscribe(reportUnserved);
      signal.addEventListener("abort", unsubscribe, { once: true });
    },
    validateReload(next, inForce, file, services) {
      // a reload may not take an address from a pool while a Service holds it
      const held = services ??
        (cluster.services?.hasSynced() ? cluster.services.list() : undefined);
      return strandedAddressIssues(inForce, next, held, file);
    },
    async renderHostFile(request) {
      const announcer = ANNOUNCERS.find((a) => a.name === request.announcer);
      if (!announcer) {
        return {
          error: `The bare-metal provider has no announcer "${request.announcer}" (announcers: ` +
            `${ANNOUNCERS.map((a) => a.name).join(", ")})`,
          usage: true,
        };
      }
      return await announcer.renderFile(request, current());
    },
    async applyStagedHostFiles(request) {
      const daemons = (request.announcers ?? ANNOUNCERS.map((a) => a.name))
        .filter((name): name is HostDaemon => name === "keepalived" || name === "bird");
      return await applyHostConfig({
        config: current(),
        host: request.host,
        agentUser: request.agentUser,
        daemons,
      });
    },
    serveHostReaders(request) {
      if (request.announcers && !request.announcers.includes("bird")) return [];
      return serveHostReaders(current(), request.host, request.signal);
    },
    planCluster({ nodes, services }) {
      const config = current();
      const instances = new BaremetalInstances(inventory);
      instances.useNodes(() => nodes);
      return {
        instances,
        allocations: planAllocations(config, services),
        // pod routes only where the provider has Routes (some peer receives pod CIDRs)
        ...(routesPodCidrs(config) ? { podRoutes: decidePodRoutes({ config, nodes }) } : {}),
      };
    },
    async reconfigure(reason) {
      power.monitor.sync();
      await hostSide?.sync(reason);
      if (events && cluster.services?.hasSynced()) {
        reportOrphanedAddresses(loadBalancer.orphanedAllocations(), cluster.services, events);
      }
      reportUnserved();
    },
    initialize(context) {
      power.monitor.start(context.signal);
      events = context.events;
      reportUnserved();
      const heartbeats = context.heartbeats;
      decided = () => podDecision(context.nodes);
      if (heartbeats) {
        reported = () =>
          reportedRoutes({
            config: current(),
            heartbeats: heartbeats.list(),
            nodes: context.nodes.list(),
            decision: podDecision(context.nodes),
          });
      }
      context.signal.addEventListener("abort", () => {
        events = undefined;
        reported = undefined;
        decided = undefined;
      }, { once: true });
      return Promise.resolve();
    },
  };
  return provider;
}

/**
 * Routes that answer through this host's BIRD; where BIRD does not run here, from the other
 * hosts' heartbeats alone; else fail (retriable).
 */
function hostRoutes(
  bird: () => Routes | undefined,
  reported: () => (() => Route[]) | undefined,
  decided: () => (() => PodRouteDecision) | undefined,
): Routes {
  const get = (): Routes => {
    const routes = bird();
    const fromHeartbeats = reported();
    if (!routes && fromHeartbeats) return heartbeatRoutes(fromHeartbeats, decided());
    if (!routes) {
      throw new ProviderError(
        "BIRD does not run on this host (not a control-plane machine, or no [bgp] at start-up)",
      );
    }
    return routes;
  };
  return {
    listRoutes: async (cluster) => await get().listRoutes(cluster),
    createRoute: async (cluster, hint, route) => await get().createRoute(cluster, hint, route),
    deleteRoute: async (cluster, route) => await get().deleteRoute(cluster, route),
  };
}

/** Routes judged only from the other hosts' heartbeats (this host renders no BIRD). */
function heartbeatRoutes(
  reported: () => Route[],
  decided: (() => PodRouteDecision) | undefined,
): Routes {
  const has = (route: Route) =>
    reported().some((r) =>
      r.targetNode === route.targetNode && r.destinationCIDR === route.destinationCIDR.toLowerCase()
    );
  const refusal = (route: Route) =>
    decided?.().refused.find((r) => r.node === route.targetNode && r.cidr === route.destinationCIDR)
      ?.reason;
  return {
    listRoutes: () => Promise.resolve(reported()),
    createRoute: (_cluster, _hint, route) => {
      if (has(route)) return Promise.resolve();
      const why = refusal(route);
      return Promise.reject(
        new ProviderError(
          why
            ? `Not announcing ${route.destinationCIDR} for Node "${route.targetNode}": ${why}`
            : `No host reports ${route.destinationCIDR} of Node "${route.targetNode}" announced ` +
              "to an eligible peer, and BIRD does not run on this host",
        ),
      );
    },
    // every host renders from its own caches: a deleted Node's routes leave them by themselves
    deleteRoute: () => Promise.resolve(),
  };
}
