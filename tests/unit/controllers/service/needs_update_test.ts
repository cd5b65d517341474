import assert from "node:assert/strict";
import type { V1Service } from "@kubernetes/client-node";
import { needsUpdate } from "../../../../src/controllers/service/needs_update.ts";
import { handlesDefault, lbService } from "./_harness.ts";

/** The record the bare-metal provider writes on a Service (its pool), as the controller is told. */
const OPTIONS = { handles: handlesDefault, recordAnnotations: ["keelson.io/allocated-from-pool"] };

function changed(mutate: (service: V1Service) => void): boolean {
  const old = lbService("web");
  const next = structuredClone(old);
  mutate(next);
  return needsUpdate(old, next, OPTIONS);
}

Deno.test("needsUpdate() triggers on the upstream spec and metadata changes", () => {
  const triggers: [string, (service: V1Service) => void][] = [
    ["type", (s) => (s.spec!.type = "ClusterIP")],
    ["class", (s) => (s.spec!.loadBalancerClass = "example.com/other")],
    ["annotation", (s) => (s.metadata!.annotations = { a: "b" })],
    ["loadBalancerIP", (s) => (s.spec!.loadBalancerIP = "203.0.113.5")],
    ["port", (s) => (s.spec!.ports![0]!.port = 443)],
    ["nodePort", (s) => (s.spec!.ports![0]!.nodePort = 30443)],
    ["port count", (s) => s.spec!.ports!.push({ port: 53, protocol: "UDP" })],
    ["externalTrafficPolicy", (s) => (s.spec!.externalTrafficPolicy = "Local")],
    ["healthCheckNodePort", (s) => (s.spec!.healthCheckNodePort = 31000)],
    ["sourceRanges", (s) => (s.spec!.loadBalancerSourceRanges = ["10.0.0.0/8"])],
    ["sessionAffinity", (s) => (s.spec!.sessionAffinity = "ClientIP")],
    ["externalIPs", (s) => (s.spec!.externalIPs = ["192.0.2.1"])],
    ["ipFamilies", (s) => (s.spec!.ipFamilies = ["IPv4", "IPv6"])],
    ["ipFamilyPolicy", (s) => (s.spec!.ipFamilyPolicy = "PreferDualStack")],
    ["uid", (s) => (s.metadata!.uid = "other")],
    ["deletionTimestamp", (s) => (s.metadata!.deletionTimestamp = new Date(0))],
  ];
  for (const [what, mutate] of triggers) assert.equal(changed(mutate), true, what);
});

Deno.test("needsUpdate() ignores status, finalizers, labels and selector", () => {
  const quiet: [string, (service: V1Service) => void][] = [
    ["status", (s) => (s.status = { loadBalancer: { ingress: [{ ip: "203.0.113.5" }] } })],
    ["finalizers", (s) => (s.metadata!.finalizers = ["x"])],
    ["labels", (s) => (s.metadata!.labels = { a: "b" })],
    ["selector", (s) => (s.spec!.selector = { app: "web" })],
    ["resourceVersion", (s) => (s.metadata!.resourceVersion = "99")],
    ["allocateLoadBalancerNodePorts", (s) => (s.spec!.allocateLoadBalancerNodePorts = false)],
  ];
  for (const [what, mutate] of quiet) assert.equal(changed(mutate), false, what);
});

Deno.test("needsUpdate() ignores the provider's record keelson.io/allocated-from-pool, which Keelson writes itself", () => {
  const pool = "keelson.io/allocated-from-pool";
  assert.equal(changed((s) => (s.metadata!.annotations = { [pool]: "lan" })), false, "added");
  // the controller knows no annotation of its own: without the provider's list it is one like any
  const bare = lbService("web");
  const annotated = structuredClone(bare);
  annotated.metadata!.annotations = { [pool]: "lan" };
  assert.equal(needsUpdate(bare, annotated, { handles: handlesDefault }), true, "not a record");
  const old = lbService("web");
  old.metadata!.annotations = { [pool]: "lan", a: "b" };
  const next = structuredClone(old);
  delete next.metadata!.annotations![pool];
  assert.equal(needsUpdate(old, next, OPTIONS), false, "removed");
  next.metadata!.annotations![pool] = "other";
  assert.equal(needsUpdate(old, next, OPTIONS), false, "changed");
  next.metadata!.annotations!.a = "c";
  assert.equal(needsUpdate(old, next, OPTIONS), true, "another annotation changed too");
  assert.equal(
    changed((s) => (s.metadata!.annotations = { "keelson.io/address-pool": "lan" })),
    true,
    "a request annotation",
  );
});
