/**
 * The one write of an ensure and the one write of a cleanup: a strategic-merge patch of the
 * `services/{name}/status` subresource that carries the finalizer, the provider's annotations and
 * `status.loadBalancer` together.
 *
 * What kube-apiserver (1.35) does with such a patch, as tests/integration/service_writes_test.ts
 * shows: the Service status strategy resets only spec, so `metadata.finalizers` (merged as a set,
 * other finalizers kept), `metadata.annotations` (merged as a map) and the status all land in one
 * request; `status.loadBalancer.ingress` is an atomic list, replaced as a whole; removing the last
 * finalizer of a deleted Service completes its deletion; a finalizer cannot be added once the
 * Service is being deleted (422).
 *
 * @module
 */
import type { V1LoadBalancerIngress, V1Service } from "@kubernetes/client-node";
import type { EnsuredLoadBalancer } from "../../cloud/provider.ts";
import { hasCleanupFinalizer, LOAD_BALANCER_CLEANUP_FINALIZER } from "./finalizer.ts";
import { currentIngress, ingressEqual } from "./ingress.ts";

/** A strategic-merge patch for the Service status subresource. */
export interface ServiceStatusPatch {
  metadata?: {
    finalizers?: string[];
    "$deleteFromPrimitiveList/finalizers"?: string[];
    annotations?: Record<string, string>;
  };
  status?: { loadBalancer: { ingress: V1LoadBalancerIngress[] | null } };
}

/**
 * The patch that makes the Service show what the provider ensured: the cleanup finalizer if
 * missing, each provider annotation whose value differs, and the ingress if it differs (only the
 * ingress list is compared, as upstream).
 * @param service the Service as cached
 * @param ensured what `ensureLoadBalancer` returned
 * @returns the patch, or undefined when the Service already shows all of it
 */
export function ensurePatch(
  service: V1Service,
  ensured: EnsuredLoadBalancer,
): ServiceStatusPatch | undefined {
  const patch: ServiceStatusPatch = {};
  const metadata: NonNullable<ServiceStatusPatch["metadata"]> = {};
  if (!hasCleanupFinalizer(service)) metadata.finalizers = [LOAD_BALANCER_CLEANUP_FINALIZER];
  const have = service.metadata?.annotations ?? {};
  const annotations = Object.entries(ensured.serviceAnnotations ?? {})
    .filter(([key, value]) => have[key] !== value);
  if (annotations.length > 0) metadata.annotations = Object.fromEntries(annotations);
  if (Object.keys(metadata).length > 0) patch.metadata = metadata;
  if (!ingressEqual(currentIngress(service), ensured.ingress)) {
    patch.status = { loadBalancer: { ingress: ensured.ingress ?? null } };
  }
  return Object.keys(patch).length > 0 ? patch : undefined;
}

/**
 * The patch that lets a released Service go: clears the ingress (an address still in a status
 * counts as taken) and removes every occurrence of the finalizer, keeping other finalizers.
 * @param service the Service as cached
 * @returns the patch, or undefined when there is nothing to clear
 */
export function cleanupPatch(service: V1Service): ServiceStatusPatch | undefined {
  const patch: ServiceStatusPatch = {};
  if (hasCleanupFinalizer(service)) {
    patch.metadata = { "$deleteFromPrimitiveList/finalizers": [LOAD_BALANCER_CLEANUP_FINALIZER] };
  }
  if (currentIngress(service).length > 0) patch.status = { loadBalancer: { ingress: null } };
  return Object.keys(patch).length > 0 ? patch : undefined;
}
