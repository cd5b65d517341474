/**
 * The `externalTrafficPolicy: Local` check. A VIP lands on a host that serves its pool and
 * kube-proxy there forwards it; with policy Local, kube-proxy drops traffic for a Service that has
 * no endpoint on that host. So a Local Service whose endpoints all run off the hosts that serve
 * its VIP gets a Warning instead of a silent black hole.
 *
 * @module
 */
import type { V1Service } from "@kubernetes/client-node";

/** Where a Service's endpoints run; the run wiring backs it with EndpointSlices. */
export interface EndpointLocator {
  /**
   * The Node names of the Service's ready endpoints.
   * @returns the names, or undefined when unknown (no cache yet): no verdict then
   */
  endpointNodeNames(service: V1Service): string[] | undefined;
  /**
   * The Node names of the hosts that serve these VIPs.
   * @param vips the Service's ingress addresses
   */
  servingNodeNames(vips: readonly string[]): string[];
}

/** The event reason of the warning. */
export const LOCAL_TRAFFIC_DROPPED_REASON = "LocalTrafficDropped";

/**
 * The warning to emit for a Service, if any: policy Local, at least one endpoint known, and none
 * of them on a Node that serves its VIP.
 * @param service the Service (after a successful ensure)
 * @param locator where endpoints run
 * @param vips the Service's ingress addresses, for the message
 * @returns the message, or undefined when there is nothing to warn about
 */
export function localTrafficWarning(
  service: V1Service,
  locator: EndpointLocator,
  vips: readonly string[],
): string | undefined {
  if (service.spec?.externalTrafficPolicy !== "Local") return undefined;
  const endpointNodes = locator.endpointNodeNames(service);
  // No endpoints at all drops traffic under any policy; that is not what this warning is about.
  if (endpointNodes === undefined || endpointNodes.length === 0) return undefined;
  const serving = [...new Set(locator.servingNodeNames(vips))].sort();
  if (endpointNodes.some((name) => serving.includes(name))) return undefined;
  const nodes = [...new Set(endpointNodes)].sort();
  const vipText = vips.length > 0 ? vips.map((vip) => `"${vip}"`).join(", ") : "its VIP";
  return `Traffic to ${vipText} will be dropped: externalTrafficPolicy is Local and none of the ` +
    `endpoints (on Nodes ${list(nodes)}) run on a Node that serves the VIP (${list(serving)}); ` +
    `run an endpoint on one of those Nodes or use externalTrafficPolicy Cluster`;
}

function list(names: readonly string[]): string {
  if (names.length === 0) return "none";
  const shown = names.slice(0, 10).map((name) => `"${name}"`).join(", ");
  return names.length > 10 ? `${shown} and ${names.length - 10} more` : shown;
}
