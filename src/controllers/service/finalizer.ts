/**
 * The LoadBalancer cleanup finalizer: added before a load balancer is created so a Service cannot
 * disappear before its address is released, removed once it is.
 *
 * Both patches are strategic-merge patches meant for the `services/{name}/status` subresource, as
 * upstream sends them: `metadata.finalizers` merges as a set there, so other finalizers are kept and
 * no resourceVersion precondition is needed.
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

/**
 * The strategic-merge patch that adds the finalizer (the list merges as a set).
 * @returns the patch body
 */
export function addFinalizerPatch(): unknown {
  return { metadata: { finalizers: [LOAD_BALANCER_CLEANUP_FINALIZER] } };
}

/**
 * The strategic-merge patch that removes every occurrence of the finalizer and keeps the others.
 * @returns the patch body
 */
export function removeFinalizerPatch(): unknown {
  return {
    metadata: { "$deleteFromPrimitiveList/finalizers": [LOAD_BALANCER_CLEANUP_FINALIZER] },
  };
}
