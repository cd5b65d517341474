import assert from "node:assert/strict";
import fc from "fast-check";
import {
  endpointStatesByNode,
  isObjectName,
  MAX_ENDPOINT_SLICES,
  MAX_ENDPOINTS_PER_SLICE,
  readServiceRef,
  readyEndpointNodeNames,
} from "../../../src/kube/endpoint_nodes.ts";

const SERVICE = {
  metadata: { name: "web", namespace: "shop" },
  spec: { type: "LoadBalancer", externalTrafficPolicy: "Local" },
};

function slice(
  endpoints: { node: string; conditions?: Record<string, unknown> }[],
  extra: Record<string, unknown> = {},
  service = "web",
): Record<string, unknown> {
  return {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      name: `${service}-x`,
      namespace: "shop",
      labels: { "kubernetes.io/service-name": service },
    },
    addressType: "IPv4",
    endpoints: endpoints.map((e) => ({
      addresses: ["10.244.0.5"],
      nodeName: e.node,
      ...(e.conditions ? { conditions: e.conditions } : {}),
    })),
    ...extra,
  };
}

Deno.test("readyEndpointNodeNames(): ready or absent counts; not ready, not serving and terminating do not", () => {
  const names = readyEndpointNodeNames([
    slice([
      { node: "w-3", conditions: { ready: true, serving: true, terminating: false } },
      { node: "w-1" },
      { node: "w-2", conditions: {} },
      { node: "w-4", conditions: { ready: false } },
      // what the API never sends for a Pod that is going away, but might from a broken writer
      { node: "w-5", conditions: { serving: false } },
      { node: "w-6", conditions: { ready: true, terminating: true } },
      { node: "w-7", conditions: { terminating: true, serving: true } },
      { node: "w-8", conditions: { ready: null } },
      { node: "w-9", conditions: { ready: "yes" } },
    ]),
  ], SERVICE);
  assert.deepEqual(names, ["w-1", "w-2", "w-3", "w-8"]);
});

Deno.test("endpointStatesByNode(): one ready endpoint on a Node wins, then a not-ready one, then terminating", () => {
  const states = endpointStatesByNode([
    slice([
      { node: "a", conditions: { terminating: true, ready: false } },
      { node: "a", conditions: { ready: false } },
      { node: "a", conditions: { ready: true } },
      { node: "b", conditions: { terminating: true, ready: false } },
      { node: "b", conditions: { ready: false, serving: false } },
      { node: "c", conditions: { terminating: true, ready: false, serving: true } },
    ]),
  ], { namespace: "shop", name: "web" });
  assert.deepEqual(Object.fromEntries(states), { a: "ready", b: "not-ready", c: "terminating" });
});

Deno.test("only IPv4/IPv6 discovery.k8s.io/v1 EndpointSlices of the Service count", () => {
  const ready = [{ node: "w-1", conditions: { ready: true } }];
  for (
    const [why, foreign] of [
      ["FQDN slice", slice(ready, { addressType: "FQDN" })],
      ["no address type", slice(ready, { addressType: undefined })],
      ["other kind", slice(ready, { kind: "Endpoints" })],
      ["other version", slice(ready, { apiVersion: "discovery.k8s.io/v1beta1" })],
      ["other Service", slice(ready, {}, "api")],
      [
        "other namespace",
        slice(ready, {
          metadata: { namespace: "x", labels: { "kubernetes.io/service-name": "web" } },
        }),
      ],
      ["no labels", slice(ready, { metadata: { namespace: "shop" } })],
    ] as const
  ) {
    assert.deepEqual(readyEndpointNodeNames([foreign], SERVICE), [], why);
  }
  assert.deepEqual(readyEndpointNodeNames([slice(ready, { addressType: "IPv6" })], SERVICE), [
    "w-1",
  ]);
  // items of a list carry no kind or apiVersion: they are not held against a slice
  assert.deepEqual(
    readyEndpointNodeNames([slice(ready, { kind: undefined, apiVersion: undefined })], SERVICE),
    ["w-1"],
  );
});

Deno.test("a Service that cannot be read gets no verdict; the policy is Local only when it says exactly that", () => {
  const slices = [slice([{ node: "w-1" }])];
  for (
    const bad of [
      undefined,
      "web",
      { kind: "ConfigMap", metadata: { name: "web", namespace: "shop" } },
      { metadata: { name: "Web", namespace: "shop" } },
      { metadata: { name: "web" } },
    ]
  ) {
    assert.equal(readyEndpointNodeNames(slices, bad), undefined, JSON.stringify(bad));
  }
  assert.equal(readServiceRef(SERVICE)?.policy, "Local");
  for (const policy of [undefined, "Cluster", "local", 7]) {
    const ref = readServiceRef({ ...SERVICE, spec: { externalTrafficPolicy: policy } });
    assert.equal(ref?.policy, "Cluster", String(policy));
  }
});

Deno.test("reads are bounded: slices past MAX_ENDPOINT_SLICES and endpoints past MAX_ENDPOINTS_PER_SLICE are not read", () => {
  const filler = slice([], {}, "api");
  const slices = [...Array(MAX_ENDPOINT_SLICES).fill(filler), slice([{ node: "w-1" }])];
  assert.deepEqual(readyEndpointNodeNames(slices, SERVICE), []);
  assert.deepEqual(readyEndpointNodeNames(slices.slice(1), SERVICE), ["w-1"]);
  const many = Array.from({ length: MAX_ENDPOINTS_PER_SLICE }, () => ({
    node: "w-1",
    conditions: { ready: false },
  }));
  assert.deepEqual(readyEndpointNodeNames([slice([...many, { node: "w-2" }])], SERVICE), []);
  assert.deepEqual(readyEndpointNodeNames([slice([...many.slice(1), { node: "w-2" }])], SERVICE), [
    "w-2",
  ]);
});

Deno.test("Node names that are no object names are skipped; names come back sorted and unique", () => {
  const names = readyEndpointNodeNames([
    slice([{ node: "w-2" }, { node: "W-1" }, { node: "x".repeat(254) }, { node: "w-1\u001b[31m" }]),
    slice([{ node: "w-2" }, { node: "cp-1" }, { node: "" }]),
    {
      ...slice([]),
      endpoints: [null, 3, { nodeName: 7 }, { nodeName: "w-3", conditions: "ready" }],
    },
    { ...slice([]), endpoints: "many" },
    null,
    "slice",
  ], SERVICE);
  // `conditions: "ready"` is no conditions object: ready absent counts as ready
  assert.deepEqual(names, ["cp-1", "w-2", "w-3"]);
  assert.equal(isObjectName("x".repeat(253)), true);
  assert.equal(isObjectName("x".repeat(254)), false);
  for (const bad of ["", "-a", "a-", "A", "a_b", 3, undefined]) {
    assert.equal(isObjectName(bad), false, String(bad));
  }
});

Deno.test("property: arbitrary JSON never throws, and every name returned is an object name", () => {
  fc.assert(fc.property(fc.anything(), fc.array(fc.anything(), { maxLength: 5 }), (svc, slices) => {
    const names = readyEndpointNodeNames(slices, svc) ?? [];
    assert.ok(names.every(isObjectName));
  }));
});
