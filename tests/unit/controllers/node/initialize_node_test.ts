import assert from "node:assert/strict";
import type { InstanceMetadata } from "../../../../src/cloud/provider.ts";
import {
  addressesChanged,
  addressUpdate,
  applyInitialization,
} from "../../../../src/controllers/node/initialize_node.ts";

const metadata: InstanceMetadata = {
  providerID: "baremetal://m1",
  instanceType: "",
  nodeAddresses: [
    { type: "InternalIP", address: "10.0.0.1" },
    { type: "InternalIP", address: "fd00::1" },
  ],
  zone: "z",
  region: "",
  additionalLabels: { "topology.kubernetes.io/zone": "evil", extra: "1" },
};

Deno.test("applyInitialization sets only non-empty topology labels and never lets additional labels override them", () => {
  const { node, labels } = applyInitialization({
    metadata: { name: "n" },
    spec: {
      taints: [{ key: "node.cloudprovider.kubernetes.io/uninitialized", effect: "NoSchedule" }],
    },
  }, metadata);
  assert.deepEqual(labels, {
    "topology.kubernetes.io/zone": "z",
    "failure-domain.beta.kubernetes.io/zone": "z",
    extra: "1",
  });
  assert.equal(node.spec?.taints, undefined);
  assert.equal(node.spec?.providerID, "baremetal://m1");
});

/** Freezes `value` and everything under it, so a write anywhere throws (modules are strict). */
function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object") {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

Deno.test("applyInitialization leaves the Node it was given (the informer's cached object) unchanged", () => {
  const cached = deepFreeze({
    metadata: { name: "n", labels: { keep: "me" }, annotations: { a: "b" } },
    spec: {
      podCIDR: "10.244.1.0/24",
      taints: [
        { key: "node.cloudprovider.kubernetes.io/uninitialized", effect: "NoSchedule" },
        { key: "other", effect: "NoExecute" },
      ],
    },
    status: { addresses: [{ type: "Hostname", address: "n" }] },
  });
  const before = structuredClone(cached);
  const { node } = applyInitialization(cached, metadata);
  assert.deepEqual(cached, before);
  assert.deepEqual(node.metadata?.labels, {
    keep: "me",
    "topology.kubernetes.io/zone": "z",
    "failure-domain.beta.kubernetes.io/zone": "z",
    extra: "1",
  });
  assert.deepEqual(node.spec?.taints, [{ key: "other", effect: "NoExecute" }]);
  assert.equal(node.spec?.podCIDR, "10.244.1.0/24");
  assert.deepEqual(node.status, cached.status);
  assert.deepEqual(node.metadata?.annotations, { a: "b" });
});

Deno.test("applyInitialization fails when neither the provider nor the Node has a providerID", () => {
  assert.throws(
    () => applyInitialization({ metadata: { name: "n" } }, { ...metadata, providerID: "" }),
    /does not set node provider ID/,
  );
});

Deno.test("addressesChanged sees no change in an identical dual-stack list but sees a reorder", () => {
  const list = metadata.nodeAddresses;
  assert.equal(addressesChanged(list, [...list]), false);
  assert.equal(addressesChanged(list, [...list].reverse()), true);
});

Deno.test("addressUpdate appends kubelet's Hostname when the cloud has none and skips an unchanged list", () => {
  const node = {
    metadata: { name: "n" },
    status: { addresses: [{ type: "Hostname", address: "n" }] },
  };
  const next = addressUpdate(node, metadata);
  assert.deepEqual(next?.map((a) => a.type), ["InternalIP", "InternalIP", "Hostname"]);
  assert.equal(addressUpdate({ ...node, status: { addresses: next! } }, metadata), undefined);
  assert.equal(addressUpdate(node, { ...metadata, nodeAddresses: [] }), undefined);
});
