import assert from "node:assert/strict";
import fc from "fast-check";
import type { V1Node } from "@kubernetes/client-node";
import {
  EXCLUDE_FROM_LOAD_BALANCERS_LABEL,
  excludedByLabel,
  loadBalancerNodes,
  nodeSetKey,
  nodeSetsEqual,
  NodeSetTracker,
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

/** A small Node: few names, so events collide. */
function nodeArbitrary() {
  return fc.record({
    name: fc.constantFrom("a", "b", "B", "c", "d", "e", "f10", "f9"),
    providerID: fc.constantFrom("", "p://1", "p://2"),
    excluded: fc.boolean(),
  });
}

function toNode(n: { name: string; providerID: string; excluded: boolean }): V1Node {
  return {
    metadata: {
      name: n.name,
      ...(n.excluded ? { labels: { [EXCLUDE_FROM_LOAD_BALANCERS_LABEL]: "true" } } : {}),
    },
    spec: { providerID: n.providerID },
  };
}

Deno.test("NodeSetTracker follows Node events to the same node set as a full recomputation (property)", () => {
  const change = fc.record({
    type: fc.constantFrom("add", "update", "delete"),
    name: fc.constantFrom("a", "b", "B", "c", "f10", "f9"),
    providerID: fc.constantFrom("", "p://1", "p://2"),
    excluded: fc.boolean(),
  });
  fc.assert(
    fc.property(
      fc.array(nodeArbitrary(), { maxLength: 5 }),
      fc.array(change, { maxLength: 25 }),
      (initial, changes) => {
        const cache = new Map(initial.map((n) => [n.name, toNode(n)]));
        const tracker = new NodeSetTracker();
        tracker.reset([...cache.values()]);
        let last = tracker.current();
        for (const c of changes) {
          const node = toNode(c);
          if (c.type === "delete") {
            const old = cache.get(c.name);
            if (!old) continue;
            cache.delete(c.name);
            tracker.apply("delete", old);
          } else {
            const type = cache.has(c.name) ? "update" : "add";
            cache.set(c.name, node);
            tracker.apply(type, node);
          }
          const now = tracker.current();
          const expected = loadBalancerNodes([...cache.values()]);
          assert.ok(
            now.nodes.length === expected.length && now.nodes.every((n, i) => n === expected[i]),
            "the eligible Nodes, sorted, the latest objects",
          );
          assert.deepEqual(now.key, nodeSetKey(expected));
          if (nodeSetsEqual(last.key, now.key)) assert.equal(now.key, last.key, "the key is kept");
          last = now;
        }
      },
    ),
    { numRuns: 1000 },
  );
});
