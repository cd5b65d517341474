/**
 * The provider the offline commands (`keelson render`, `keelson plan`) ask: the one the
 * inventory's `[cluster] provider` names, from the built-in list, given the inventory alone (no
 * cluster, no metrics exported, nothing started).
 *
 * @module
 */
import { registerBuiltInProviders } from "../../providers/mod.ts";
import type { CloudProvider } from "../cloud/provider.ts";
import { ProviderRegistry } from "../cloud/registry.ts";
import type { Config } from "../config/types.ts";
import { errorMessage } from "../log/error_message.ts";
import { printError } from "./output.ts";

/**
 * Builds the inventory's provider.
 * @param config the validated inventory
 * @returns the provider, or undefined (said on stderr) when it cannot be built
 */
export function offlineProvider(config: Config): CloudProvider | undefined {
  const registry = new ProviderRegistry();
  registerBuiltInProviders(registry);
  try {
    return registry.create(config);
  } catch (error) {
    printError(errorMessage(error));
    return undefined;
  }
}
