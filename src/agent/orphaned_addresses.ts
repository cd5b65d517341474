/**
 * Addresses Services hold that no pool offers: a reload can no longer cause them (a reload that
 * would strand served addresses is rejected, see `stranded_addresses.ts`), but a process started
 * with a changed file, or a status written by hand, can. Each gets a Warning event; keepalived
 * does not serve them (`AddressNotServed`), and the Service keeps them in its status until its
 * owner changes the Service or the pool is restored.
 *
 * @module
 */
import type { V1Service } from "@kubernetes/client-node";
import type { Config } from "../config/types.ts";
import type { EventRecorder } from "../kube/ports.ts";
import { planAllocations } from "../../providers/baremetal/ipam/plan_allocations.ts";

/** Event reason for an address that no pool of the current configuration offers. */
export const REASON_ADDRESS_NOT_IN_POOL = "AddressNotInPool";

const WHY: Record<string, string> = {
  outside: "no pool contains it any more",
  reserved: "it is now reserved",
  network: "it is now the network address of a pool",
  broadcast: "it is now the broadcast address of a pool",
};

/**
 * Emits one Warning per orphaned address.
 * @param config the configuration now in force
 * @param services every Service in the cache
 * @param events the service controller's recorder
 * @returns how many warnings were emitted
 */
export function reportOrphanedAddresses(
  config: Config,
  services: readonly V1Service[],
  events: EventRecorder,
): number {
  const byKey = new Map(services.map((s) => [`${s.metadata?.namespace}/${s.metadata?.name}`, s]));
  const orphans = planAllocations(config, services).orphans;
  for (const orphan of orphans) {
    const service = byKey.get(orphan.serviceKey);
    if (!service) continue;
    events.event(
      { kind: "Service", apiVersion: "v1", metadata: service.metadata ?? {} },
      "Warning",
      REASON_ADDRESS_NOT_IN_POOL,
      `Keeping address ${orphan.ip} of service "${orphan.serviceKey}" although ${
        WHY[orphan.why] ?? orphan.why
      }${orphan.pool ? ` (was pool "${orphan.pool}")` : ""}: the VIP stays up; ` +
        "change the Service's requested address or restore the pool to clear this",
    );
  }
  return orphans.length;
}
