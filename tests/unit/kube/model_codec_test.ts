import assert from "node:assert/strict";
import { V1Node } from "@kubernetes/client-node";
import { modelTypeFor, toJson, toModel } from "../../../src/kube/model_codec.ts";

const RAW_NODE = {
  apiVersion: "v1",
  kind: "Node",
  metadata: {
    name: "n1",
    resourceVersion: "42",
    creationTimestamp: "2026-01-02T03:04:05Z",
    labels: { "topology.kubernetes.io/zone": "z1" },
    managedFields: [{ manager: "kubelet", operation: "Update", time: "2026-01-02T03:04:05Z" }],
  },
  spec: { taints: [{ key: "k", effect: "NoSchedule", timeAdded: "2026-01-02T03:04:06Z" }] },
  status: {
    capacity: { cpu: "4", memory: "8Gi", "ephemeral-storage": "100Gi" },
    conditions: [{
      type: "Ready",
      status: "True",
      lastHeartbeatTime: "2026-01-02T03:04:07Z",
      lastTransitionTime: "2026-01-02T03:04:08Z",
    }],
  },
};

Deno.test("toModel() gives the same representation as client-node's API: model classes with Date fields", () => {
  const node = toModel<V1Node>(RAW_NODE, "V1Node");
  assert.ok(node instanceof V1Node);
  assert.ok(node.metadata?.creationTimestamp instanceof Date);
  assert.ok(node.status?.conditions?.[0]?.lastHeartbeatTime instanceof Date);
  assert.equal(node.status?.capacity?.["memory"], "8Gi");
});

Deno.test("toJson() of toModel() keeps every field, with date-times as equal instants and quantities unchanged", () => {
  const json = toJson(toModel(RAW_NODE, "V1Node"), "V1Node") as typeof RAW_NODE;
  assert.equal(
    Date.parse(json.metadata.creationTimestamp),
    Date.parse(RAW_NODE.metadata.creationTimestamp),
  );
  assert.equal(
    Date.parse(json.status.conditions[0]!.lastTransitionTime),
    Date.parse(RAW_NODE.status.conditions[0]!.lastTransitionTime),
  );
  const normalize = (value: unknown) =>
    JSON.parse(
      JSON.stringify(value),
      (_key, v) =>
        typeof v === "string" && /^\d{4}-\d\d-\d\dT/.test(v) ? new Date(v).toISOString() : v,
    );
  assert.deepEqual(normalize(json), normalize(RAW_NODE));
});

Deno.test("modelTypeFor() names client-node models of core and grouped kinds", () => {
  assert.equal(modelTypeFor("Node"), "V1Node");
  assert.equal(modelTypeFor("Service", "v1"), "V1Service");
  assert.equal(modelTypeFor("Lease", "coordination.k8s.io/v1"), "V1Lease");
  assert.equal(modelTypeFor("Event"), "CoreV1Event");
  assert.equal(modelTypeFor("Event", "events.k8s.io/v1"), "EventsV1Event");
});
