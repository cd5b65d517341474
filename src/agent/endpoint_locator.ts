/**
 * Where a Service's ready endpoints run, from EndpointSlices (`readyEndpointNodeNames`, the
 * reading BIRD and keepalived share), and which Nodes serve its VIPs (the provider's word, else the
 * control-plane Nodes), for the service controller's warning about `externalTrafficPolicy: Local`
 * Services whose VIP lands on a host with no ready endpoint.
 *
 * @module
 */
import type { V1EndpointSlice, V1Node, V1Service } from "@kubernetes/client-node";
import type { EndpointLocator } from "../controllers/service/local_traffic.ts";
import type { Config } from "../config/types.ts";
import { readyEndpointNodeNames } from "../kube/endpoint_nodes.ts";
import type { Lister } from "../kube/ports.ts";

const CONTROL_PLANE_ROLE_LABEL = "node-role.kubernetes.io/control-plane";

/**
 * Builds the locator over the slice and node caches.
 * @param slices the EndpointSlice cache
 * @param nodes the Node cache
 * @param config the configuration in force (control-plane machines)
 * @param servingHosts the provider's hosts for a set of addresses, when it says
 * @returns the locator
 */
export function createEndpointLocator(
  slices: Lister<V1EndpointSlice> & { hasSynced(): boolean },
  nodes: Lister<V1Node>,
  config: () => Config,
  servingHosts?: (addresses: readonly string[]) => string[],
): EndpointLocator {
  return {
    endpointNodeNames(service: V1Service): string[] | undefined {
      if (!slices.hasSynced()) return undefined;
      return readyEndpointNodeNames(slices.list(), service);
    },
    servingNodeNames(vips: readonly string[]): string[] {
      if (servingHosts) return servingHosts(vips);
      const machines = new Set(
        config().machines.filter((m) => m.role === "control-plane").map((m) => m.name),
      );
      return nodes.list()
        .filter((n) =>
          machines.has(n.metadata?.name ?? "") ||
          n.metadata?.labels?.[CONTROL_PLANE_ROLE_LABEL] !== undefined
        )
        .map((n) => n.metadata?.name ?? "")
        .sort();
    },
  };
}
