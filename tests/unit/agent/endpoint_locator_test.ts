import assert from "node:assert/strict";
import type { V1EndpointSlice, V1Node } from "@kubernetes/client-node";
import { createEndpointLocator } from "../../../src/agent/endpoint_locator.ts";
import { localTrafficWarning } from "../../../src/controllers/service/local_traffic.ts";
import { ConfigSchema } from "../../../src/config/schema.ts";

const config = ConfigSchema.parse({
  machines: [
    { name: "cp-1", role: "control-plane", internal_ips: ["10.0.0.11"] },
    { name: "w-1", internal_ips: ["10.0.0.21"] },
  ],
});
const slices = {
  get: () => undefined,
  list: (): V1EndpointSlice[] => [{
    metadata: { namespace: "web", labels: { "kubernetes.io/service-name": "local" } },
    addressType: "IPv4",
    endpoints: [{ addresses: ["10.244.0.9"], nodeName: "w-1", conditions: { ready: true } }],
  }],
  hasSynced: () => true,
};
const nodes = {
  get: () => undefined,
  list: (): V1Node[] => [{ metadata: { name: "cp-1" } }, { metadata: { name: "w-1" } }],
};
const service = {
  metadata: { name: "local", namespace: "web" },
  spec: { type: "LoadBalancer", externalTrafficPolicy: "Local" },
};

Deno.test("the Local-traffic warning judges endpoints against the hosts that serve the VIP, as the provider names them", () => {
  // a pool served by the workers: an endpoint on w-1 is where the traffic lands
  const byProvider = createEndpointLocator(slices, nodes, () => config, () => ["w-1"]);
  assert.deepEqual(byProvider.servingNodeNames(["192.0.2.5"]), ["w-1"]);
  assert.equal(localTrafficWarning(service, byProvider, ["192.0.2.5"]), undefined);
  // a provider that does not say: the control-plane Nodes serve every VIP
  const byRole = createEndpointLocator(slices, nodes, () => config);
  assert.deepEqual(byRole.servingNodeNames(["192.0.2.5"]), ["cp-1"]);
  assert.match(
    localTrafficWarning(service, byRole, ["192.0.2.5"]) ?? "",
    /none of the endpoints \(on Nodes "w-1"\) run on a Node that serves the VIP \("cp-1"\)/,
  );
});
