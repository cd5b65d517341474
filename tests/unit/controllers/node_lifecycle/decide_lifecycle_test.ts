import assert from "node:assert/strict";
import type { V1Node } from "@kubernetes/client-node";
import type { InstancesV2, MachineState } from "../../../../src/cloud/provider.ts";
import {
  decideLifecycle,
  MAINTENANCE_TAINT,
  RETIRED_TAINT,
  SHUTDOWN_TAINT,
} from "../../../../src/controllers/node_lifecycle/decide_lifecycle.ts";

const UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized";

function node(ready: "True" | "False" | undefined, taints: string[] = []): V1Node {
  return {
    metadata: { name: "n1" },
    spec: { taints: taints.map((key) => ({ key, effect: "NoSchedule" })) },
    status: { conditions: ready ? [{ type: "Ready", status: ready }] : [] },
  };
}

/** A provider with Keelson's `instanceState` extension. */
function withState(state: MachineState | Error): InstancesV2 {
  const unused = () => Promise.reject(new Error("upstream calls are not used"));
  return {
    instanceExists: unused,
    instanceShutdown: unused,
    instanceMetadata: unused,
    instanceState: () => state instanceof Error ? Promise.reject(state) : Promise.resolve(state),
  };
}

/** A provider with only upstream's calls; counts them. */
function upstreamOnly(exists: boolean, shutdown: boolean) {
  const calls: string[] = [];
  const instances: InstancesV2 = {
    instanceExists: () => (calls.push("exists"), Promise.resolve(exists)),
    instanceShutdown: () => (calls.push("shutdown"), Promise.resolve(shutdown)),
    instanceMetadata: () => Promise.resolve(null),
  };
  return { instances, calls };
}

interface Expected {
  ready?: string;
  state?: MachineState;
  delete?: RegExp;
  blocked?: RegExp;
  add?: string[];
  remove?: string[];
  error?: RegExp;
}

Deno.test("decideLifecycle() decides taints and deletion for each readiness and machine state", async () => {
  const cases: [name: string, node: V1Node, instances: InstancesV2, expected: Expected][] = [
    ["Ready, active: nothing", node("True"), withState("active"), { state: "active" }],
    [
      "Ready loses the shutdown taint whatever the provider says",
      node("True", [SHUTDOWN_TAINT]),
      withState("shutdown"),
      { state: "shutdown", remove: [SHUTDOWN_TAINT] },
    ],
    [
      "Ready, retired: retired taint (a Ready Node is never deleted)",
      node("True"),
      withState("retired"),
      { state: "retired", add: [RETIRED_TAINT] },
    ],
    [
      "Ready, maintenance: maintenance taint",
      node("True"),
      withState("maintenance"),
      { state: "maintenance", add: [MAINTENANCE_TAINT] },
    ],
    [
      "Ready, back to active: both Keelson taints go",
      node("True", [RETIRED_TAINT, MAINTENANCE_TAINT]),
      withState("active"),
      { state: "active", remove: [RETIRED_TAINT, MAINTENANCE_TAINT] },
    ],
    [
      "Ready, absent: taints are left as they are",
      node("True", [RETIRED_TAINT]),
      withState("absent"),
      { state: "absent" },
    ],
    [
      "NotReady, absent: delete",
      node("False"),
      withState("absent"),
      { state: "absent", delete: /does not exist in the cloud provider/ },
    ],
    [
      "no Ready condition counts as not Ready",
      node(undefined),
      withState("absent"),
      { ready: "Unknown", state: "absent", delete: /does not exist/ },
    ],
    [
      "NotReady, retired: delete",
      node("False"),
      withState("retired"),
      { state: "retired", delete: /retired in the inventory/ },
    ],
    [
      "NotReady, absent, never initialized: blocked, not deleted",
      node("False", [UNINITIALIZED]),
      withState("absent"),
      { state: "absent", blocked: /never initialized/ },
    ],
    [
      "NotReady, retired, never initialized: deleted (retirement is deliberate)",
      node("False", [UNINITIALIZED]),
      withState("retired"),
      { state: "retired", delete: /retired/ },
    ],
    [
      "NotReady, shutdown: shutdown taint",
      node("False"),
      withState("shutdown"),
      { state: "shutdown", add: [SHUTDOWN_TAINT] },
    ],
    [
      "NotReady, shutdown, already tainted: nothing new",
      node("False", [SHUTDOWN_TAINT]),
      withState("shutdown"),
      { state: "shutdown" },
    ],
    [
      "NotReady, maintenance: maintenance taint",
      node("False"),
      withState("maintenance"),
      { state: "maintenance", add: [MAINTENANCE_TAINT] },
    ],
    [
      "NotReady, active again: the retired and maintenance taints go, shutdown stays",
      node("False", [RETIRED_TAINT, MAINTENANCE_TAINT, SHUTDOWN_TAINT]),
      withState("active"),
      { state: "active", remove: [MAINTENANCE_TAINT, RETIRED_TAINT] },
    ],
    [
      "the provider cannot tell: the Node is skipped this round",
      node("False"),
      withState(new Error("inventory unreadable")),
      { error: /inventory unreadable/ },
    ],
  ];
  for (const [name, n, instances, expected] of cases) {
    const d = await decideLifecycle(n, instances);
    assert.equal(d.ready, expected.ready ?? n.status?.conditions?.[0]?.status, `${name}: ready`);
    assert.equal(d.state, expected.state, `${name}: state`);
    assert.deepEqual(d.addTaints.map((t) => t.key).sort(), (expected.add ?? []).sort(), name);
    assert.deepEqual([...d.removeTaints].sort(), (expected.remove ?? []).sort(), name);
    for (const key of ["delete", "blocked"] as const) {
      if (expected[key]) assert.match(d[key] ?? "", expected[key], `${name}: ${key}`);
      else assert.equal(d[key], undefined, `${name}: no ${key}`);
    }
    if (expected.error) assert.match(d.error?.message ?? "", expected.error, name);
    else assert.equal(d.error, undefined, `${name}: no error`);
  }
});

Deno.test("decideLifecycle() asks an upstream-only provider nothing about Ready Nodes", async () => {
  const cases: [
    ready: "True" | "False",
    exists: boolean,
    shutdown: boolean,
    calls: string[],
    state: MachineState | undefined,
  ][] = [
    ["True", false, false, [], undefined],
    ["False", false, false, ["exists"], "absent"],
    ["False", true, true, ["exists", "shutdown"], "shutdown"],
    ["False", true, false, ["exists", "shutdown"], "active"],
  ];
  for (const [ready, exists, shutdown, calls, state] of cases) {
    const fake = upstreamOnly(exists, shutdown);
    const d = await decideLifecycle(node(ready), fake.instances);
    assert.deepEqual(fake.calls, calls, `Ready=${ready} exists=${exists} shutdown=${shutdown}`);
    assert.equal(d.state, state);
  }
});
