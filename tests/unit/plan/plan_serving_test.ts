import assert from "node:assert/strict";
import { parseConfig } from "../../../src/config/parse_config.ts";
import {
  formatServing,
  formatServingChanges,
  planServing,
  servingChanges,
} from "../../../src/plan/plan_serving.ts";

const MACHINES = `
[[machines]]
name = "cp-1"
role = "control-plane"
internal_ips = ["10.0.0.11"]

[[machines]]
name = "w-1"
internal_ips = ["10.0.0.21"]

[[machines]]
name = "w-2"
internal_ips = ["10.0.0.22"]
`;

const pool = (servedBy = "") =>
  `[[pools]]\nname = "lan"\naddresses = ["192.0.2.0/28"]\n${servedBy}`;

const inForce = parseConfig(pool() + MACHINES, "in-force.toml");
const toWorkers = parseConfig(
  pool('[pools.served_by]\nroles = ["worker"]\n') + MACHINES,
  "proposed.toml",
);
const nodes = [
  { metadata: { name: "cp-1" }, status: { conditions: [{ type: "Ready", status: "True" }] } },
  { metadata: { name: "w-2" }, status: { conditions: [{ type: "Ready", status: "False" }] } },
];

Deno.test("planServing(): one inventory lists each pool's hosts with the Nodes' readiness", () => {
  const plan = planServing(toWorkers, undefined, nodes);
  assert.equal(servingChanges(plan), false, "no inventory in force: nothing to compare");
  assert.deepEqual(plan.pools.map((p) => [p.pool, p.inForce, p.proposed]), [["lan", null, [
    "w-1",
  ]]]);
  assert.deepEqual(formatServing(plan), [
    "Serving hosts (1 pool):",
    "  lan (VRRP): w-1, w-2 (Node not Ready)",
  ]);
});

Deno.test("planServing(): a pool moved to other hosts is a change, with the hosts before and after", () => {
  const plan = planServing(toWorkers, inForce, nodes);
  assert.equal(servingChanges(plan), true);
  assert.deepEqual(formatServingChanges(plan), [
    "",
    "Serving hosts that would change (1):",
    "  lan (VRRP): cp-1 -> w-1",
  ]);
  const same = planServing(inForce, inForce, nodes);
  assert.equal(servingChanges(same), false);
  assert.deepEqual(formatServingChanges(same), []);
});

Deno.test("planServing(): a proposed pool nothing could serve is a problem line", () => {
  const allDown = [
    ...nodes,
    { metadata: { name: "w-1" }, status: { conditions: [{ type: "Ready", status: "Unknown" }] } },
  ];
  const plan = planServing(toWorkers, inForce, allDown);
  assert.deepEqual(plan.problems, [
    "pool lan: no machine can serve it (w-1 (Node not Ready), w-2 (Node not Ready))",
  ]);
  assert.deepEqual(formatServingChanges(plan).slice(1), [
    "Serving hosts that would change (1):",
    "  lan (VRRP): cp-1 -> none",
    "  problem: pool lan: no machine can serve it (w-1 (Node not Ready), w-2 (Node not Ready))",
  ]);
});
