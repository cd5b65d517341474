import assert from "node:assert/strict";
import type { V1Service } from "@kubernetes/client-node";
import { asItStands } from "../../../src/plan/as_it_stands.ts";
import { diffPlans, hasChanges } from "../../../src/plan/plan_diff.ts";
import type { ClusterPlan } from "../../../src/plan/plan_diff.ts";

function service(name: string, ips: string[]): V1Service {
  return {
    metadata: { namespace: "ns", name },
    spec: { type: "LoadBalancer" },
    status: { loadBalancer: { ingress: ips.map((ip) => ({ ip })) } },
  };
}

function proposed(services: { name: string; ips: string[]; pool?: string }[]): ClusterPlan {
  return {
    nodes: [{
      node: "n1",
      ready: "True",
      machineState: "active",
      actions: [{ action: "announce-route", cidr: "10.244.0.0/24", nextHop: "192.0.2.10" }],
    }],
    services: {
      services: services.map((s) => ({
        serviceKey: `ns/${s.name}`,
        outcome: s.ips.length ? "kept" : "pending",
        ips: s.ips,
        pool: s.pool,
        pools: s.ips.map(() => s.pool),
      })),
      otherClass: [],
      orphans: [],
      stats: [],
      problems: [],
    },
  };
}

Deno.test("asItStands: Services keep their statuses' addresses, Nodes have no action", () => {
  const cluster = [service("a", ["192.0.2.1"]), service("b", ["2001:DB8::1"]), service("c", [])];
  const plan = proposed([
    { name: "a", ips: ["192.0.2.1"], pool: "lan" },
    { name: "b", ips: ["2001:db8::1"], pool: "v6" },
    { name: "c", ips: ["192.0.2.2"], pool: "lan" },
  ]);
  const standing = asItStands(cluster, plan);
  assert.deepEqual(standing.nodes.map((n) => [n.node, n.actions, n.machineState]), [
    ["n1", [], undefined],
  ]);
  const diff = diffPlans(standing, plan, { refused: [], reportedBy: new Map() });
  // a and b (canonical text compared) keep theirs; c gets one; n1's route is new
  assert.deepEqual(diff.services.map((s) => [s.serviceKey, s.change]), [["ns/c", "allocated"]]);
  assert.deepEqual(diff.routes.map((r) => [r.node, r.cidr, r.proposed.state]), [
    ["n1", "10.244.0.0/24", "announced"],
  ]);
  assert.ok(hasChanges(diff));
});

Deno.test("asItStands: a Service whose address the proposed inventory would change is an address change", () => {
  const plan = proposed([{ name: "a", ips: ["192.0.2.9"], pool: "lan" }]);
  const diff = diffPlans(asItStands([service("a", ["192.0.2.1"])], plan), plan, {
    refused: [],
    reportedBy: new Map(),
  });
  assert.deepEqual(diff.services.map((s) => [s.serviceKey, s.change]), [["ns/a", "address"]]);
  assert.deepEqual(diff.services[0]!.inForce.ips, ["192.0.2.1"]);
});
