import assert from "node:assert/strict";
import type { V1Node } from "@kubernetes/client-node";
import {
  decidePodGc,
  POD_SWEEP_INTERVAL_MS,
  POD_SWEEP_WINDOW_MS,
  podGcBlockedBy,
  type PodGcInput,
} from "../../../../src/controllers/out_of_service/decide_pod_gc.ts";
import {
  OUT_OF_SERVICE_MARKER,
  OUT_OF_SERVICE_TAINT,
} from "../../../../src/controllers/out_of_service/decide_out_of_service.ts";
import type { NodePod } from "../../../../src/kube/node_pods.ts";

const TERMINATING = "2026-12-02T03:00:00Z";

function node(
  options: { ready?: string; taint?: boolean; marker?: boolean; name?: string } = {},
): V1Node {
  const { ready = "Unknown", taint = true, marker = true, name = "w-1" } = options;
  return {
    metadata: {
      name,
      ...(marker ? { annotations: { [OUT_OF_SERVICE_MARKER]: "2026-12-02T03:00:00.000Z" } } : {}),
    },
    spec: taint ? { taints: [{ ...OUT_OF_SERVICE_TAINT }] } : {},
    status: { conditions: [{ type: "Ready", status: ready }] },
  };
}

function pod(name: string, options: { node?: string; deleting?: string } = {}): NodePod {
  return {
    namespace: "default",
    name,
    uid: `uid-${name}`,
    nodeName: options.node ?? "w-1",
    ...(options.deleting === undefined ? {} : { deletionTimestamp: options.deleting }),
  };
}

function input(overrides: Partial<PodGcInput> = {}): PodGcInput {
  return {
    node: node(),
    pods: [],
    policy: { enabled: true },
    sweepStartedMs: 1_000_000,
    nowMs: 1_000_000,
    ...overrides,
  };
}

const names = (pods: NodePod[]) => pods.map((p) => p.name);

Deno.test("decidePodGc deletes exactly the terminating Pods of a Node Keelson tainted that is not Ready", () => {
  for (const ready of ["False", "Unknown"]) {
    const decision = decidePodGc(input({
      node: node({ ready }),
      pods: [
        pod("terminating", { deleting: TERMINATING }),
        pod("running"),
        pod("tolerating-still-running"),
      ],
    }));
    assert.equal(decision.blocked, undefined);
    assert.deepEqual(names(decision.deletions), ["terminating"]);
    assert.equal(decision.notTerminating, 2);
    // the others may yet be marked by the taint-eviction controller: look again soon
    assert.equal(decision.recheckAfterMs, POD_SWEEP_INTERVAL_MS);
  }
  // a Node without its Ready condition is not Ready either (as upstream's IsNodeReady)
  const noCondition = node();
  noCondition.status = {};
  assert.deepEqual(
    names(
      decidePodGc(input({ node: noCondition, pods: [pod("t", { deleting: TERMINATING })] }))
        .deletions,
    ),
    ["t"],
  );
});

Deno.test("decidePodGc never deletes a Pod of another Node, whatever the list answered", () => {
  const decision = decidePodGc(input({
    pods: [
      pod("other", { node: "w-2", deleting: TERMINATING }),
      pod("prefix", { node: "w-10", deleting: TERMINATING }),
      pod("mine", { deleting: TERMINATING }),
    ],
  }));
  assert.deepEqual(names(decision.deletions), ["mine"]);
  // a Node without a name matches no Pod
  const nameless = node();
  delete nameless.metadata!.name;
  assert.deepEqual(
    decidePodGc(input({ node: nameless, pods: [pod("x", { node: "", deleting: TERMINATING })] }))
      .deletions,
    [],
  );
});

Deno.test("decidePodGc deletes nothing on a Ready Node, a Node without the taint, or a taint Keelson did not add", () => {
  const pods = [pod("terminating", { deleting: TERMINATING })];
  const cases: Array<[V1Node, RegExp]> = [
    [node({ ready: "True" }), /Ready/],
    [node({ taint: false }), /no out-of-service taint/],
    [node({ marker: false }), /not one Keelson added/],
    [node({ taint: false, marker: true }), /no out-of-service taint/],
  ];
  for (const [n, why] of cases) {
    const decision = decidePodGc(input({ node: n, pods }));
    assert.deepEqual(decision.deletions, []);
    assert.match(decision.blocked ?? "", why);
    assert.equal(decision.recheckAfterMs, undefined);
  }
});

Deno.test("decidePodGc deletes nothing while out_of_service is off or power actions are held", () => {
  const pods = [pod("terminating", { deleting: TERMINATING })];
  const off = decidePodGc(input({ pods, policy: { enabled: false } }));
  assert.deepEqual(off.deletions, []);
  assert.match(off.blocked ?? "", /out_of_service is off/);
  const held = decidePodGc(input({
    pods,
    policy: { enabled: true, held: "the last reload was rejected" },
  }));
  assert.deepEqual(held.deletions, []);
  assert.match(held.blocked ?? "", /reload was rejected/);
  assert.equal(podGcBlockedBy(node(), { enabled: true }), undefined);
});

Deno.test("decidePodGc: a Pod not terminating, or with a deletion time that is not a time, is left", () => {
  const decision = decidePodGc(input({
    pods: [pod("no-time"), pod("garbage", { deleting: "yesterday-ish" })],
  }));
  assert.deepEqual(decision.deletions, []);
  assert.equal(decision.notTerminating, 2);
});

Deno.test("decidePodGc: the sweep ends when no Pod is left on the Node or its window has passed", () => {
  assert.equal(decidePodGc(input({ pods: [] })).recheckAfterMs, undefined);
  assert.equal(
    decidePodGc(input({ pods: [pod("running")], nowMs: 1_000_000 + POD_SWEEP_WINDOW_MS - 1 }))
      .recheckAfterMs,
    POD_SWEEP_INTERVAL_MS,
  );
  const late = decidePodGc(input({
    pods: [pod("running"), pod("t", { deleting: TERMINATING })],
    nowMs: 1_000_000 + POD_SWEEP_WINDOW_MS,
  }));
  assert.equal(late.recheckAfterMs, undefined);
  // what is due is still deleted on the last look
  assert.deepEqual(names(late.deletions), ["t"]);
});
