/**
 * What the kubelet Lease cache keeps of each Lease: the few fields the power-loss witness reads,
 * each of its type and bounded; everything else is dropped.
 */
import assert from "node:assert/strict";
import { trimKubeletLease } from "../../../src/kube/kubelet_leases.ts";

Deno.test("trimKubeletLease keeps name, namespace, resourceVersion, holder, duration and renew time only", () => {
  const raw = {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: {
      name: "w-1",
      namespace: "kube-node-lease",
      resourceVersion: "812",
      uid: "u",
      ownerReferences: [{ kind: "Node", name: "w-1" }],
      managedFields: [{ manager: "kubelet", fieldsV1: { "f:spec": {} } }],
      labels: { big: "x".repeat(60) },
    },
    spec: {
      holderIdentity: "w-1",
      leaseDurationSeconds: 40,
      renewTime: "2026-12-02T00:00:00.123456Z",
      acquireTime: "2026-12-01T00:00:00.000000Z",
    },
  };
  assert.deepEqual(trimKubeletLease(raw), {
    metadata: { name: "w-1", namespace: "kube-node-lease", resourceVersion: "812" },
    spec: {
      holderIdentity: "w-1",
      leaseDurationSeconds: 40,
      renewTime: "2026-12-02T00:00:00.123456Z",
    },
  });
});

Deno.test("trimKubeletLease leaves out what is not of its type or too long", () => {
  const trimmed = trimKubeletLease({
    metadata: { name: "n".repeat(300), resourceVersion: 7 },
    spec: { holderIdentity: ["w-1"], leaseDurationSeconds: "40", renewTime: { t: 1 } },
  });
  assert.deepEqual(trimmed, { metadata: {}, spec: {} });
  assert.deepEqual(trimKubeletLease(null), { metadata: {}, spec: {} });
  assert.deepEqual(trimKubeletLease({ spec: { leaseDurationSeconds: 1e300 } }), {
    metadata: {},
    spec: {},
  });
});
