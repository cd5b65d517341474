/**
 * The LoadBalancer Service the benchmarks create (peers, the CPU profile).
 *
 * @module
 */
import type { V1Service } from "@kubernetes/client-node";

/**
 * A LoadBalancer Service with one port and a selector, as the benchmarks create them.
 * @param name its name (also its `app` label and selector)
 * @returns the object to POST
 */
export function lbService(name: string): V1Service {
  return {
    metadata: { name, labels: { app: name } },
    spec: {
      type: "LoadBalancer",
      selector: { app: name },
      ports: [{ name: "http", port: 80, targetPort: 8080, protocol: "TCP" }],
    },
  };
}
