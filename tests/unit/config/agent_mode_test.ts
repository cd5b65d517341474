/**
 * Which hosts run in host-side mode: workers that a pool's `served_by` selects; control-plane
 * machines and workers that serve nothing run in full, as before.
 */
import assert from "node:assert/strict";
import { agentMode } from "../../../src/config/agent_mode.ts";
import { ConfigSchema } from "../../../src/config/schema.ts";

const config = ConfigSchema.parse({
  pools: [
    { name: "inner", addresses: ["192.0.2.0/28"] },
    { name: "edge", addresses: ["192.0.2.32/28"], served_by: { labels: { edge: "yes" } } },
  ],
  machines: [
    { name: "cp-1", role: "control-plane", internal_ips: ["10.0.0.11"], labels: { edge: "yes" } },
    { name: "w-1", internal_ips: ["10.0.0.21"], labels: { edge: "yes" } },
    { name: "w-2", internal_ips: ["10.0.0.22"], labels: { edge: "yes" }, state: "retired" },
    { name: "w-3", internal_ips: ["10.0.0.23"] },
  ],
});

Deno.test("agentMode(): a worker a pool serves is host-side; others run in full", () => {
  assert.equal(agentMode(config, "cp-1"), "full");
  assert.equal(agentMode(config, "w-1"), "host-side");
  // retired: serves nothing for now, but never becomes a leader candidate either
  assert.equal(agentMode(config, "w-2"), "host-side");
  assert.equal(agentMode(config, "w-3"), "full");
  assert.equal(agentMode(config, "unknown"), "full");
});
