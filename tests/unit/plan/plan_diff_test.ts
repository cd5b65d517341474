import assert from "node:assert/strict";
import type { AllocationPlan } from "../../../src/cloud/cluster_plan.ts";
import { type ClusterPlan, diffPlans, hasChanges } from "../../../src/plan/plan_diff.ts";
import type { NodePlan } from "../../../src/plan/plan_nodes.ts";

function allocations(services: AllocationPlan["services"]): AllocationPlan {
  return { services, otherClass: [], orphans: [], stats: [], problems: [] };
}

const none = { refused: [], reportedBy: new Map<string, string[]>() };

Deno.test("diffPlans: equal plans differ in nothing", () => {
  const plan: ClusterPlan = {
    nodes: [{ node: "n", ready: "True", machineState: "active", actions: [] }],
    services: allocations([]),
  };
  const diff = diffPlans(plan, plan, none);
  assert.equal(hasChanges(diff), false);
});

Deno.test("diffPlans: a pod route refused instead of announced is a route change, not a Node change", () => {
  const node = (actions: NodePlan["actions"]): NodePlan[] => [
    { node: "n", ready: "True", machineState: "active", actions },
  ];
  const diff = diffPlans(
    {
      nodes: node([{ action: "announce-route", cidr: "10.244.1.0/24", nextHop: "10.0.0.1" }]),
      services: allocations([]),
    },
    {
      nodes: node([{ action: "refuse-route", cidr: "10.244.1.0/24", reason: "outside" }]),
      services: allocations([]),
    },
    none,
  );
  assert.deepEqual(diff.nodes, []);
  assert.deepEqual(diff.routes, [{
    node: "n",
    cidr: "10.244.1.0/24",
    inForce: { state: "announced", nextHop: "10.0.0.1" },
    proposed: { state: "refused", reason: "outside" },
  }]);
});

Deno.test("diffPlans: a Service whose address moves names the hosts that last reported it", () => {
  const served = (ip: string, pool: string) =>
    allocations([{ serviceKey: "a/web", outcome: "kept", ips: [ip], pool, pools: [pool] }]);
  const diff = diffPlans(
    { nodes: [], services: served("192.0.2.1", "lan") },
    { nodes: [], services: served("192.0.2.9", "lan") },
    { refused: [], reportedBy: new Map([["192.0.2.1", ["cp-2", "cp-1"]]]) },
  );
  assert.equal(diff.services.length, 1);
  assert.equal(diff.services[0]!.change, "address");
  assert.deepEqual(diff.services[0]!.reportedBy, ["cp-1", "cp-2"]);
  assert.ok(hasChanges(diff));
});
