/**
 * The built-in providers' records, read as `keelson status` reads them (through the registry).
 *
 * @module
 */
import type { V1Service } from "@kubernetes/client-node";
import { ProviderRegistry } from "../../../src/cloud/registry.ts";
import { registerBuiltInProviders } from "../../../providers/mod.ts";

const registry = new ProviderRegistry();
registerBuiltInProviders(registry);

/**
 * The pool a built-in provider recorded on a Service.
 * @param service the Service
 */
export function builtInRecordedPool(service: V1Service): string | undefined {
  return registry.recordedPool(service);
}
