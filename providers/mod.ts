/**
 * The providers built into keelson: the one list every command that builds a provider registers
 * (`keelson run`, `render`, `plan`). A provider joins by adding its registry entry here.
 *
 * @module
 */
import type { V1Service } from "@kubernetes/client-node";
import type { ProviderInputs, ProviderRegistry } from "../src/cloud/registry.ts";
import { recordedPool as baremetalPool, registerBaremetal } from "./baremetal/mod.ts";

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

/**
 * The pool a built-in provider recorded on a Service as the one its addresses came from, for
 * readers with no provider built (`keelson status` without an inventory).
 * @param service the Service
 * @returns the pool name as written (unvalidated), or undefined
 */
export function recordedPool(service: V1Service): string | undefined {
  return baremetalPool(service);
}
