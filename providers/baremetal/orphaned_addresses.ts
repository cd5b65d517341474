/**
 * Addresses Services hold that no pool offers: a reload can no longer cause them (a reload that
 * would strand served addresses is rejected, see stranded_addresses.ts), but a process
 * started with a changed file, or a status written by hand, can. Each gets a Warning event;
 * keepalived does not serve them (`AddressNotServed`), BIRD does not announce them (no pool owns
 * them, `ipam/address_owner.ts`), and the Service keeps them in its status
 * until its owner changes the Service or the pool is restored. The orphans come from the load
 * balancer's own allocator, so they are computed in one place.
 *
 * @module
 */
import type { V1Service } from "@kubernetes/client-node";
import type { EventRecorder, Lister } from "../../src/kube/ports.ts";
import { serviceTarget } from "../../src/kube/event_targets.ts";
import type { OrphanedAllocation } from "./ipam/allocator.ts";

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
 * @param orphans the load balancer's orphaned allocations
 * @param services the Service cache (an orphan whose Service is gone is skipped)
 * @param events the recorder (the service controller's component)
 * @returns how many warnings were emitted
 */
export function reportOrphanedAddresses(
  orphans: readonly OrphanedAllocation[],
  services: Pick<Lister<V1Service>, "get">,
  events: EventRecorder,
): number {
  let emitted = 0;
  for (const orphan of orphans) {
    const service = services.get(orphan.serviceKey);
    if (!service) continue;
    events.event(
      serviceTarget(service),
      "Warning",
      REASON_ADDRESS_NOT_IN_POOL,
      `Keeping address ${orphan.ip} of service "${orphan.serviceKey}" although ${
        WHY[orphan.why] ?? orphan.why
      }${orphan.pool ? ` (was pool "${orphan.pool}")` : ""}: it stays in the Service's ` +
        "status but is not served (keepalived and BIRD serve only addresses a pool offers); " +
        "change the Service's requested address or restore the pool to clear this",
    );
    emitted++;
  }
  return emitted;
}
