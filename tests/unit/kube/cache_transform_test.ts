import assert from "node:assert/strict";
import { cacheTransformFor, stripManagedFields } from "../../../src/kube/cache_transform.ts";

const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";

function metadata() {
  return {
    name: "x",
    namespace: "default",
    resourceVersion: "5",
    labels: { app: "x" },
    // kept on Nodes (they are PUT back from the cache)
    annotations: { [LAST_APPLIED]: '{"big":"copy"}', "keelson.io/pool": "lan" },
    managedFields: [{ manager: "kubectl", operation: "Update", fieldsV1: { "f:spec": {} } }],
  };
}

Deno.test("cacheTransformFor(Node) drops managedFields and every status field but addresses and conditions", () => {
  const node = {
    metadata: metadata(),
    spec: { providerID: "baremetal://a", taints: [{ key: "k", effect: "NoSchedule" }] },
    status: {
      addresses: [{ type: "InternalIP", address: "10.0.0.1" }],
      conditions: [{ type: "Ready", status: "True" }],
      images: [{ names: ["registry/image:1"], sizeBytes: 1 }],
      nodeInfo: { kubeletVersion: "v1.35.4" },
      capacity: { cpu: "4" },
    },
  };
  const out = cacheTransformFor("Node")(structuredClone(node));
  const { managedFields: _, ...kept } = metadata();
  assert.deepEqual(out, {
    metadata: kept,
    spec: node.spec,
    status: { addresses: node.status.addresses, conditions: node.status.conditions },
  });
});

Deno.test("cacheTransformFor(Service) drops managedFields and last-applied, keeps the rest", () => {
  const service = {
    metadata: metadata(),
    spec: { type: "LoadBalancer", ports: [{ port: 80 }] },
    status: { loadBalancer: { ingress: [{ ip: "192.0.2.1" }] } },
  };
  const out = cacheTransformFor("Service")(structuredClone(service)) as typeof service;
  assert.equal("managedFields" in out.metadata, false);
  assert.deepEqual(out.metadata.annotations, { "keelson.io/pool": "lan" });
  assert.deepEqual(out.spec, service.spec);
  assert.deepEqual(out.status, service.status);
});

Deno.test("cacheTransformFor(EndpointSlice) keeps which Nodes hold ready endpoints only", () => {
  const slice = {
    metadata: metadata(),
    addressType: "IPv4",
    ports: [{ port: 8080 }],
    endpoints: [{
      addresses: ["10.1.0.5"],
      conditions: { ready: true },
      nodeName: "w-1",
      zone: "z1",
      targetRef: { kind: "Pod", name: "web-1", namespace: "default", uid: "u" },
      hints: { forZones: [{ name: "z1" }] },
    }],
  };
  const out = cacheTransformFor("EndpointSlice")(structuredClone(slice)) as Record<string, unknown>;
  assert.deepEqual(out.endpoints, [{
    addresses: ["10.1.0.5"],
    conditions: { ready: true },
    nodeName: "w-1",
  }]);
  assert.equal("ports" in out, false);
  assert.equal(out.addressType, "IPv4");
});

Deno.test("stripManagedFields() is the default for other kinds and tolerates odd shapes", () => {
  const pod = { metadata: metadata(), spec: {} };
  const out = cacheTransformFor("Pod")(structuredClone(pod)) as typeof pod;
  assert.equal("managedFields" in out.metadata, false);
  assert.equal(out.metadata.annotations[LAST_APPLIED], '{"big":"copy"}');
  assert.equal(stripManagedFields(null), null);
  assert.equal(stripManagedFields("text"), "text");
  assert.deepEqual(cacheTransformFor("Node")({ metadata: "odd" }), { metadata: "odd" });
});
