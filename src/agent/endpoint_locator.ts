/**
 * Where a Service's endpoints run, from EndpointSlices, for the service controller's warning
 * about `externalTrafficPolicy: Local` Services whose VIP lands on a host with no endpoint.
 *
 * @module
 */
import type { V1EndpointSlice, V1Node, V1Service } from "@kubernetes/client-node";
import type { EndpointLocator } from "../controllers/service/local_traffic.ts";
import type { Config } from "../config/types.ts";
import { endpointNodeNamesOf } from "../kube/endpoint_nodes.ts";
import type { Lister } from "../kube/ports.ts";

const CONTROL_PLANE_ROLE_LABEL = "node-role.kubernetes.io/control-plane";

/**
 * Builds the locator over the slice and node caches.
 * @param slices the EndpointSlice cache
 * @param nodes the Node cache
 * @param config the configuration in force (control-plane machines)
 * @returns the locator
 */
export function createEndpointLocator(
  slices: Lister<V1EndpointSlice> & { hasSynced(): boolean },
  nodes: Lister<V1Node>,
  config: () => Config,
): EndpointLocator {
  return {
    endpointNodeNames(service: V1Service): string[] | undefined {
      if (!slices.hasSynced()) return undefined;
      return endpointNodeNamesOf(slices.list(), service);
    },
    controlPlaneNodeNames(): string[] {
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
