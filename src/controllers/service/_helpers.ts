/**
 * Small pure helpers of the service controller. Folder-internal.
 *
 * @module
 */
import type { V1Service } from "@kubernetes/client-node";
import { ProviderError } from "../../cloud/provider.ts";
import { isNotFound } from "../../kube/ports.ts";

/** The Service as if its type were LoadBalancer (to ask the class filter after a type change). */
export function asLoadBalancer(service: V1Service): V1Service {
  return { ...service, spec: { ...service.spec, type: "LoadBalancer" } };
}

/** The allocator's reason, when the provider gave one (`ProviderError.reason`, optional). */
export function allocationReason(error: unknown): string | undefined {
  if (!(error instanceof ProviderError)) return undefined;
  const reason = (error as ProviderError & { reason?: unknown }).reason;
  return typeof reason === "string" && reason !== "" ? reason : undefined;
}

/** The message of anything thrown. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Awaits a write, treating 404 Not Found as done (the object is already gone). */
export async function ignoreNotFound(write: Promise<unknown>): Promise<void> {
  try {
    await write;
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}

/**
 * The Warning events of a failed sync: upstream's `SyncLoadBalancerFailed`, plus
 * `AllocationFailed` when the provider named an allocation reason.
 * @param key `namespace/name`
 * @param error what the sync threw
 * @returns `[reason, message]` pairs in emission order
 */
export function failureEvents(key: string, error: unknown): [string, string][] {
  const events: [string, string][] = [
    ["SyncLoadBalancerFailed", `Error syncing load balancer: ${messageOf(error)}`],
  ];
  const reason = allocationReason(error);
  if (reason !== undefined) {
    events.push([
      "AllocationFailed",
      `Cannot allocate an address for service "${key}" (${reason}): ${messageOf(error)}`,
    ]);
  }
  return events;
}
