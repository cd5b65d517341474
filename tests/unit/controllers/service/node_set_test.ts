import assert from "node:assert/strict";
import type { V1Node } from "@kubernetes/client-node";
import {
  EXCLUDE_FROM_LOAD_BALANCERS_LABEL,
  excludedByLabel,
  loadBalancerNodes,
  nodeSetKey,
  nodeSetsEqual,
  nodeUpdateNeedsSync,
} from "../../../../src/controllers/service/node_set.ts";

function node(name: string, label?: string, extra: Partial<V1Node> = {}): V1Node {
  return {
    metadata: {
      name,
      ...(label === undefined ? {} : { labels: { [EXCLUDE_FROM_LOAD_BALANCERS_LABEL]: label } }),
    },
    spec: { providerID: `baremetal://${name}` },
    ...extra,
  };
}

Deno.test("excludedByLabel() follows Go ParseBool: false keeps, true or unparsable excludes", () => {
  assert.equal(excludedByLabel(node("a")), false);
  for (const value of ["0", "f", "F", "FALSE", "false", "False"]) {
    assert.equal(excludedByLabel(node("a", value)), false, value);
  }
  for (const value of ["1", "t", "true", "True", "", "yes", "no"]) {
    assert.equal(excludedByLabel(node("a", value)), true, value);
  }
});

Deno.test("loadBalancerNodes() drops deleting, excluded and autoscaler-tainted Nodes but keeps NotReady ones", () => {
  const nodes = [
    node("b", undefined, { status: { conditions: [{ type: "Ready", status: "False" }] } }),
    node("a"),
    node("excluded", "true"),
    { ...node("deleting"), metadata: { name: "deleting", deletionTimestamp: new Date(0) } },
    {
      ...node("scaled"),
      spec: { taints: [{ key: "ToBeDeletedByClusterAutoscaler", effect: "NoSchedule" }] },
    },
  ];
  assert.deepEqual(loadBalancerNodes(nodes).map((n) => n.metadata?.name), ["a", "b"]);
});

Deno.test("nodeSetsEqual() compares names and providerIDs only", () => {
  const a = nodeSetKey([node("a"), node("b")]);
  const withAddress = node("a", undefined, {
    status: { addresses: [{ type: "InternalIP", address: "10.0.0.9" }] },
  });
  assert.equal(nodeSetsEqual(a, nodeSetKey([withAddress, node("b")])), true);
  assert.equal(nodeSetsEqual(a, nodeSetKey([node("a")])), false);
  const moved = { ...node("b"), spec: { providerID: "baremetal://other" } };
  assert.equal(nodeSetsEqual(a, nodeSetKey([node("a"), moved])), false);
});

Deno.test("nodeUpdateNeedsSync() fires on the exclusion verdict or providerID, not on readiness", () => {
  assert.equal(nodeUpdateNeedsSync(node("a"), node("a", "true")), true);
  assert.equal(nodeUpdateNeedsSync(node("a", "false"), node("a")), false);
  assert.equal(
    nodeUpdateNeedsSync(node("a"), { ...node("a"), spec: { providerID: "baremetal://x" } }),
    true,
  );
  assert.equal(
    nodeUpdateNeedsSync(
      node("a"),
      node("a", undefined, { status: { conditions: [{ type: "Ready", status: "False" }] } }),
    ),
    false,
  );
});
