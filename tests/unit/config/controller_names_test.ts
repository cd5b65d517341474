import assert from "node:assert/strict";
import { controllersProblem, resolveControllers } from "../../../src/config/controller_names.ts";

Deno.test("resolveControllers() enables all for * and honours -name", () => {
  const all = resolveControllers(["*"]);
  assert.ok("enabled" in all);
  assert.deepEqual([...all.enabled].sort(), [
    "cloud-node",
    "cloud-node-lifecycle",
    "out-of-service",
    "pv-labels",
    "route",
    "service",
    "vip-host",
  ]);
  const some = resolveControllers([
    "*",
    "-service-lb-controller",
    "-pv-labels",
    "-vip-host",
    "-out-of-service-controller",
  ]);
  assert.ok("enabled" in some);
  assert.deepEqual([...some.enabled].sort(), ["cloud-node", "cloud-node-lifecycle", "route"]);
});

Deno.test("resolveControllers() accepts aliases and reports unknown names", () => {
  const one = resolveControllers(["cloud-node-controller"]);
  assert.ok("enabled" in one);
  assert.deepEqual([...one.enabled], ["cloud-node"]);
  assert.deepEqual(resolveControllers(["*", "nodes"]), { unknown: ["nodes"] });
  const route = resolveControllers(["*", "-route"]);
  assert.ok("enabled" in route && !route.enabled.has("route"));
  const only = resolveControllers(["node-route-controller"]);
  assert.ok("enabled" in only);
  assert.deepEqual([...only.enabled], ["route"]);
});

Deno.test("controllersProblem() names unknown entries and the known names", () => {
  assert.equal(controllersProblem(["*", "-route"]), undefined);
  assert.match(
    controllersProblem(["nodes"]) ?? "",
    /unknown controller "nodes" \(known: "\*", "cloud-node"/,
  );
});
