/**
 * The LoadBalancer cleanup finalizer: written with the first ingress so a Service cannot disappear
 * before its address is released, removed once it is.
 *
 * It is written with the status in one strategic-merge patch of the `services/{name}/status`
 * subresource (status_patch.ts): `metadata.finalizers` merges as a set there, so other finalizers
 * are kept and no resourceVersion precondition is needed.
 *
 * @module
 */
import type { V1Service } from "@kubernetes/client-node";

/** Upstream's finalizer name (`servicehelper.LoadBalancerCleanupFinalizer`). */
export const LOAD_BALANCER_CLEANUP_FINALIZER = "service.kubernetes.io/load-balancer-cleanup";

/**
 * Whether the Service carries the cleanup finalizer.
 * @param service the Service
 * @returns true when `metadata.finalizers` contains it
 */
export function hasCleanupFinalizer(service: V1Service): boolean {
  return service.metadata?.finalizers?.includes(LOAD_BALANCER_CLEANUP_FINALIZER) ?? false;
}
