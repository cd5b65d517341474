/**
 * The built-in bare-metal provider, and its registry entry: machines from the TOML inventory
 * (InstancesV2), VIPs from the inventory's pools (LoadBalancer, `load_balancer.ts`), and the host
 * side that announces them from this host (`host_side.ts`: keepalived, through the
 * `HostAnnouncer` seam). Everything outside `providers/` reaches the provider through this file.
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
import type { V1Service } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import type { CloudProvider, LoadBalancer } from "../../src/cloud/provider.ts";
import type { ProviderRegistry } from "../../src/cloud/registry.ts";
import type { Config } from "../../src/config/types.ts";
import type { EventRecorder, Informer } from "../../src/kube/ports.ts";
import { type HostSide, startHostSide } from "./host_side.ts";
import { BaremetalInstances, type InventorySource } from "./instances.ts";
import { createLoadBalancer } from "./load_balancer.ts";
import { reportOrphanedAddresses } from "./orphaned_addresses.ts";
import { UnservedAddressReporter } from "./unserved_addresses.ts";

export { BaremetalInstances, type InventorySource, type InventoryView } from "./instances.ts";
export { machineMetadata } from "./instances.ts";
export { type MachineMatch, matchMachine, type MatchStep } from "./machine_matcher.ts";
export { renderHostKeepalived, serviceVipsOf } from "./keepalived/announcer.ts";
export {
  servedAddressChecker,
  servedServiceAddresses,
  type SkippedAddress,
} from "./keepalived/served_addresses.ts";
export { strandedAddressIssues } from "./stranded_addresses.ts";
export { REASON_ADDRESS_NOT_SERVED } from "./unserved_addresses.ts";
export { USER_NAME_REGEXP } from "./keepalived/render.ts";
export { type AllocationPlan, planAllocations } from "./ipam/plan_allocations.ts";

/** The registry name and providerID scheme. */
export const BAREMETAL_PROVIDER_NAME = "baremetal";

/** Options of `createBaremetalProvider`. */
export interface BaremetalProviderOptions {
  /** The LoadBalancer capability (built from the same inventory). @default none */
  loadBalancer?: LoadBalancer;
}

/**
 * Builds the bare-metal provider's inventory part (no host side): what offline commands and
 * tests use.
 * @param inventory returns the configuration in force and whether it is usable
 * @param options optional capabilities
 * @returns the provider, with `instancesV2` and, when given, `loadBalancer`
 */
export function createBaremetalProvider(
  inventory: InventorySource,
  options: BaremetalProviderOptions = {},
): CloudProvider & { instancesV2: BaremetalInstances } {
  const instancesV2 = new BaremetalInstances(inventory);
  const provider: CloudProvider & { instancesV2: BaremetalInstances } = {
    providerName: BAREMETAL_PROVIDER_NAME,
    hasClusterID: () => true,
    instancesV2,
    // the Nodes tell which machines are taken (machine identity, issue 9 item 2)
    initialize: (context) => {
      instancesV2.useNodes(() => context.nodes.list());
      return Promise.resolve();
    },
  };
  if (options.loadBalancer) return { ...provider, loadBalancer: options.loadBalancer };
  return provider;
}

/** Options of `registerBaremetal`. */
export interface RegisterBaremetalOptions {
  /** The live inventory (reloads, health). @default the Config given to the factory, always healthy */
  inventory?: InventorySource;
  /** Where the provider's metrics go (pool usage, keepalived). @default not exported */
  metrics?: Registry;
}

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
  const loadBalancer = createLoadBalancer({
    config: current,
    services: () => cluster.services,
    hasSynced: () => cluster.services?.hasSynced() ?? false,
    registry: metrics,
  });
  const base = createBaremetalProvider(inventory, { loadBalancer });
  // the leader's Warning Events for Service addresses keepalived will not serve
  const unserved = new UnservedAddressReporter();
  const reportUnserved = (): void => {
    const services = cluster.services;
    if (!services?.hasSynced()) return;
    unserved.schedule(() => ({ config: current(), services: services.list() }), () => events);
  };
  const provider: CloudProvider = {
    ...base,
    async startHost({ host, signal }) {
      hostSide = await startHostSide({ config: current, host, registry: metrics, signal });
      return hostSide;
    },
    connect({ nodes, services, signal }) {
      cluster.services = services;
      // the Nodes tell which machines are taken (machine identity)
      base.instancesV2.useNodes(() => nodes.list(), { notifies: true });
      const nodesChanged = nodes.subscribe(() => base.instancesV2.nodesChanged());
      signal.addEventListener("abort", nodesChanged, { once: true });
      hostSide?.connect(services, signal);
      const unsubscribe = services.subscribe(reportUnserved);
      signal.addEventListener("abort", unsubscribe, { once: true });
    },
    async reconfigure(reason) {
      await hostSide?.sync(reason);
      if (events && cluster.services?.hasSynced()) {
        reportOrphanedAddresses(loadBalancer.orphanedAllocations(), cluster.services, events);
      }
      reportUnserved();
    },
    initialize(context) {
      events = context.events;
      reportUnserved();
      context.signal.addEventListener("abort", () => events = undefined, { once: true });
      return Promise.resolve();
    },
  };
  return provider;
}
