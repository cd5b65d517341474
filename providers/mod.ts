/**
 * The providers built into keelson: the one list every command that builds a provider registers
 * (`keelson run`, `render`, `plan`). A provider joins by adding its registry entry here.
 *
 * @module
 */
import type { ProviderInputs, ProviderRegistry } from "../src/cloud/registry.ts";
import { registerBaremetal } from "./baremetal/mod.ts";

/**
 * Registers every built-in provider.
 * @param registry the process's registry
 * @param inputs the live inventory and the metrics registry, handed to each provider
 */
export function registerBuiltInProviders(
  registry: ProviderRegistry,
  inputs: ProviderInputs = {},
): void {
  registerBaremetal(registry, inputs);
}
