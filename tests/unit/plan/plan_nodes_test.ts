import assert from "node:assert/strict";
import { loadConfigFile } from "../../../src/config/load_config.ts";
import { policyFromConfig } from "../../../src/controllers/node_lifecycle/node_lifecycle_controller.ts";
import { formatPlan } from "../../../src/plan/format_plan.ts";
import { planNodes } from "../../../src/plan/plan_nodes.ts";
import { loadSnapshot } from "../../../src/snapshot/load_snapshot.ts";
import { createBaremetalProvider } from "../../../providers/baremetal/mod.ts";

const CONFIG = new URL("../../../deploy/examples/keelson.toml", import.meta.url).pathname;
const STATE = new URL("../../../deploy/examples/cluster-state.yaml", import.meta.url).pathname;

async function examplePlan() {
  const config = await loadConfigFile(CONFIG);
  const snapshot = await loadSnapshot(STATE);
  const provider = createBaremetalProvider(() => ({ config, healthy: true }));
  return await planNodes(snapshot.nodes, provider.instancesV2, {
    policy: policyFromConfig(config),
  });
}

Deno.test("planNodes gives each example Node the action its case calls for", async () => {
  const plans = await examplePlan();
  const summary = Object.fromEntries(plans.map((p) => [p.node, p.actions.map((a) => a.action)]));
  assert.deepEqual(summary, {
    "cp-1": [],
    "cp-2": ["set-addresses"],
    "cp-3": ["initialize"],
    "old-9": ["delete"],
    "w-1": ["initialize"],
    "w-2": ["taint"],
    "w-3.dc1.example.net": ["initialize"],
    "w-4": ["taint"],
    "w-5": ["set-labels"],
    "w-6": ["keep"],
    "w-7": ["stay-tainted", "keep"],
  });
});

Deno.test("planNodes drops the VIP kubelet reported and matches a FQDN-named Node by hostname", async () => {
  const plans = await examplePlan();
  const cp2 = plans.find((p) => p.node === "cp-2")?.actions[0];
  assert.equal(cp2?.action, "set-addresses");
  assert.ok(
    cp2?.action === "set-addresses" && !cp2.addresses.some((a) => a.address === "10.0.0.10"),
  );
  const w3 = plans.find((p) => p.node === "w-3.dc1.example.net")?.actions[0];
  assert.equal(w3?.action === "initialize" && w3.providerID, "baremetal://SN-4X7M03");
});

Deno.test("planNodes holds the second deletion back under the default rate limit", async () => {
  const plans = await examplePlan();
  const w6 = plans.find((p) => p.node === "w-6")?.actions[0];
  assert.match(w6?.action === "keep" ? w6.reason : "", /retired.*rate limit/);
});

Deno.test("formatPlan names every Node and says why the unknown one stays tainted", async () => {
  const text = formatPlan(await examplePlan(), undefined);
  assert.match(text, /^Nodes \(11\):/);
  assert.match(text, /w-7 +stay tainted \(retried with backoff\): .*InternalIPs 10\.0\.0\.27/);
  assert.match(text, /w-4 +taint node\.cloudprovider\.kubernetes\.io\/shutdown:NoSchedule/);
  assert.match(text, /cp-1 +nothing to do/);
});
