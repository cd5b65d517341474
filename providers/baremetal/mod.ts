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
import { servingNote } from "./serving_note.ts";
import { applyHostConfig, type HostDaemon } from "./host_apply/apply_host_config.ts";
import { serveHostReaders } from "./host_apply/host_readers.ts";
import type { V1Node, V1Service } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import type { CloudProvider, LoadBalancer, Routes } from "../../src/cloud/provider.ts";
import {
  type LeaderPodRoutes,
  leaderPodRoutes,
  planPodRoutes,
  PodRouteDecisions,
  podRoutes,
  routesPodCidrs,
} from "./bird/pod_route_hooks.ts";
import { LifecycleStage } from "./lifecycle_stage.ts";
import type { ProviderInputs, ProviderRegistry } from "../../src/cloud/registry.ts";
import type { Config } from "../../src/config/types.ts";
import {
  type EventRecorder,
  type Informer,
  type InformerEvent,
  objectKey,
} from "../../src/kube/ports.ts";
import { ANNOUNCERS, type HostSide, startHostSide } from "./host_side.ts";
import { BaremetalInstances, type InventorySource } from "./instances.ts";
import { planAllocations } from "./ipam/plan_allocations.ts";
import { recordedPool } from "./ipam/service_requests.ts";
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
  }, {
    recordedPool,
    hostFiles: ANNOUNCERS.map((a) => ({ announcer: a.name, ...a.render })),
  });
}

/** The connected stage: the caches every host has once the Kubernetes connection exists. */
interface Connected {
  services: Informer<V1Service>;
  nodes: Informer<V1Node>;
  /** This host's Event recorder (the power part's Warnings on Nodes). */
  events: EventRecorder | undefined;
  /** The pod-route decision over `nodes`, decided again after a Node event or a reload. */
  podRoutes: PodRouteDecisions;
}

/** The leading stage: what the leader has for one term. */
interface Leading {
  /** The Event recorder of the Services the provider serves; absent with no service controller. */
  events: EventRecorder | undefined;
  podRoutes: LeaderPodRoutes;
}

/**
 * The full provider: each lifecycle hook builds its stage whole (`startHost` the host side,
 * `connect` the caches, `initialize` the leader's term) and the parts read it through its holder.
 */
function createFullProvider(inventory: InventorySource, metrics: Registry = new Registry()) {
  const current = () => inventory().config;
  const hostSide = new LifecycleStage<HostSide>();
  const connected = new LifecycleStage<Connected>();
  const leading = new LifecycleStage<Leading>();
  const services = () => connected.current?.services;
  const loadBalancer = createLoadBalancer({
    config: current,
    services,
    hasSynced: () => services()?.hasSynced() ?? false,
    registry: metrics,
  });
  const routes = routesPodCidrs(current())
    ? podRoutes(() => hostSide.current?.routes, () => leading.current?.podRoutes)
    : undefined;
  // the power part's Warnings go on Nodes, once connected
  const power = createBaremetalPower(current, metrics, {
    events: () => connected.current?.events,
    nodeOf: (machine) =>
      connected.current?.nodes.list().find((node) => {
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
    const cache = services();
    if (!cache?.hasSynced()) return;
    const key = event ? objectKey(event.object) : undefined;
    unserved.schedule(
      () => ({ config: current(), services: cache }),
      () => leading.current?.events,
      key,
    );
  };
  const provider: CloudProvider = {
    ...base,
    poolUsage: () => loadBalancer.poolUsage(),
    machinePower: () => power.monitor.observed(),
    async startHost({ host, signal }) {
      return hostSide.begin(
        await startHostSide({
          config: current,
          host,
          registry: metrics,
          signal,
          reportedRoutes: () => leading.current?.podRoutes.reported?.() ?? [],
        }),
      );
    },
    connect(context) {
      const { nodes, signal } = context;
      const stage = connected.begin({
        services: context.services,
        nodes,
        events: context.events,
        podRoutes: new PodRouteDecisions(current),
      }, signal);
      // the Nodes tell which machines are taken (machine identity)
      base.instancesV2.useNodes(() => nodes.list(), { notifies: true });
      const nodesChanged = nodes.subscribe((event) => {
        stage.podRoutes.nodesChanged();
        base.instancesV2.nodesChanged(event);
      });
      signal.addEventListener("abort", nodesChanged, { once: true });
      hostSide.current?.connect(context);
      const unsubscribe = context.services.subscribe(reportUnserved);
      signal.addEventListener("abort", unsubscribe, { once: true });
    },
    validateReload(next, inForce, file, given) {
      // a reload may not take an address from a pool while a Service holds it
      const cache = services();
      const held = given ?? (cache?.hasSynced() ? cache.list() : undefined);
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
      const config = current();
      const rendered = await announcer.renderFile(request, config);
      if ("error" in rendered) return rendered;
      // which pools this file serves, and with whom: a file without a pool's addresses is
      // explained by the inventory rather than guessed at
      const serving = servingNote(config, request.host, announcer.announce);
      return { ...rendered, notes: [serving, ...rendered.notes] };
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
      const podRoutes = planPodRoutes(config, nodes);
      return {
        instances,
        allocations: planAllocations(config, services),
        // pod routes only where the provider has Routes (some peer receives pod CIDRs)
        ...(podRoutes ? { podRoutes } : {}),
      };
    },
    async reconfigure(reason) {
      power.monitor.sync();
      await hostSide.current?.sync(reason);
      const events = leading.current?.events;
      const cache = services();
      if (events && cache?.hasSynced()) {
        reportOrphanedAddresses(loadBalancer.orphanedAllocations(), cache, events);
      }
      reportUnserved();
    },
    initialize(context) {
      power.monitor.start(context.signal);
      leading.begin({
        events: context.events,
        podRoutes: leaderPodRoutes(context, current, () => connected.current?.podRoutes),
      }, context.signal);
      reportUnserved();
      return Promise.resolve();
    },
  };
  return provider;
}
