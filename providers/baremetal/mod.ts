/**
 * The built-in bare-metal provider: machines from the TOML inventory (InstancesV2). The load
 * balancer (VIPs from the inventory pools) plugs in through `BaremetalProviderOptions.loadBalancer`
 * (`providers/baremetal/load_balancer.ts`).
 *
 * @example
 * ```ts
 * const registry = new ProviderRegistry();
 * registerBaremetal(registry, { inventory: () => ({ config: current, healthy }) });
 * const provider = registry.create(config);
 * ```
 *
 * @module
 */
import type { CloudProvider, LoadBalancer } from "../../src/cloud/provider.ts";
import type { ProviderRegistry } from "../../src/cloud/registry.ts";
import type { Config } from "../../src/config/types.ts";
import { BaremetalInstances, type InventorySource } from "./instances.ts";

export { BaremetalInstances, type InventorySource, type InventoryView } from "./instances.ts";
export { machineMetadata } from "./instances.ts";
export { type MachineMatch, matchMachine, type MatchStep } from "./machine_matcher.ts";

/** The registry name and providerID scheme. */
export const BAREMETAL_PROVIDER_NAME = "baremetal";

/** Options of `createBaremetalProvider`. */
export interface BaremetalProviderOptions {
  /** The LoadBalancer capability (built from the same inventory). @default none */
  loadBalancer?: LoadBalancer;
}

/**
 * Builds the bare-metal provider.
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
  /** Builds the LoadBalancer capability from the same source. @default none */
  loadBalancer?: (inventory: InventorySource) => LoadBalancer;
}

/**
 * Registers the provider under `baremetal`.
 * @param registry the process's registry
 * @param options the live inventory source and optional capabilities
 * @throws {Error} when `baremetal` is already registered
 */
export function registerBaremetal(
  registry: ProviderRegistry,
  options: RegisterBaremetalOptions = {},
): void {
  registry.register(BAREMETAL_PROVIDER_NAME, (config: Config) => {
    const inventory = options.inventory ?? (() => ({ config, healthy: true }));
    const loadBalancer = options.loadBalancer?.(inventory);
    return createBaremetalProvider(inventory, loadBalancer ? { loadBalancer } : {});
  });
}
