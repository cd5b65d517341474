/**
 * Where a Service's endpoints run, from EndpointSlices, for the service controller's warning
 * about `externalTrafficPolicy: Local` Services whose VIP lands on a host with no endpoint.
 *
 * @module
 */
import type { V1EndpointSlice, V1Node, V1Service } from "@kubernetes/client-node";
import type { EndpointLocator } from "../controllers/service/local_traffic.ts";
import type { Config } from "../config/types.ts";
import type { Lister } from "../kube/ports.ts";

const SERVICE_NAME_LABEL = "kubernetes.io/service-name";
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
      const namespace = service.metadata?.namespace;
      const name = service.metadata?.name;
      const names = new Set<string>();
      for (const slice of slices.list()) {
        if (slice.metadata?.namespace !== namespace) continue;
        if (slice.metadata?.labels?.[SERVICE_NAME_LABEL] !== name) continue;
        for (const endpoint of slice.endpoints ?? []) {
          if (endpoint.conditions?.ready === false) continue;
          if (endpoint.nodeName) names.add(endpoint.nodeName);
        }
      }
      return [...names].sort();
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
