/**
 * Where a Service's ready endpoints run, from its EndpointSlices (`kubernetes.io/service-name`):
 * read by the service controller's `externalTrafficPolicy: Local` warning and by an announcer
 * that announces a Local Service only from a host with an endpoint. Pure.
 *
 * @module
 */
import type { V1EndpointSlice, V1Service } from "@kubernetes/client-node";

/**
 * The Node names of a Service's ready endpoints, from its EndpointSlices.
 * @param slices every EndpointSlice known
 * @param service the Service
 * @returns the names, sorted and unique
 */
export function endpointNodeNamesOf(
  slices: readonly V1EndpointSlice[],
  service: V1Service,
): string[] {
  const names = new Set<string>();
  for (const slice of slices) {
    if (slice.metadata?.namespace !== service.metadata?.namespace) continue;
    if (slice.metadata?.labels?.["kubernetes.io/service-name"] !== service.metadata?.name) continue;
    for (const endpoint of slice.endpoints ?? []) {
      if (endpoint.conditions?.ready === false) continue;
      if (endpoint.nodeName) names.add(endpoint.nodeName);
    }
  }
  return [...names].sort();
}
