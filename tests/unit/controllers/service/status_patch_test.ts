import assert from "node:assert/strict";
import type { V1Service } from "@kubernetes/client-node";
import { LOAD_BALANCER_CLEANUP_FINALIZER } from "../../../../src/controllers/service/finalizer.ts";
import { cleanupPatch, ensurePatch } from "../../../../src/controllers/service/status_patch.ts";

const POOL = "keelson.io/allocated-from-pool";
const VIP = [{ ip: "203.0.113.10", ipMode: "VIP" }];

function service(extra: Partial<V1Service["metadata"]> = {}, ingress?: typeof VIP): V1Service {
  return {
    metadata: { name: "web", namespace: "shop", ...extra },
    spec: { type: "LoadBalancer" },
    ...(ingress ? { status: { loadBalancer: { ingress } } } : {}),
  };
}

Deno.test("ensurePatch() carries the finalizer, the provider's annotations and the ingress in one patch", () => {
  assert.deepEqual(
    ensurePatch(service({ finalizers: ["example.com/other"] }), {
      ingress: VIP,
      serviceAnnotations: { [POOL]: "lan" },
    }),
    {
      metadata: { finalizers: [LOAD_BALANCER_CLEANUP_FINALIZER], annotations: { [POOL]: "lan" } },
      status: { loadBalancer: { ingress: VIP } },
    },
  );
});

Deno.test("ensurePatch() sends only what differs, and nothing when the Service shows it all", () => {
  const done = service(
    { finalizers: [LOAD_BALANCER_CLEANUP_FINALIZER], annotations: { [POOL]: "lan", x: "y" } },
    VIP,
  );
  assert.equal(
    ensurePatch(done, { ingress: VIP, serviceAnnotations: { [POOL]: "lan" } }),
    undefined,
  );
  assert.deepEqual(ensurePatch(done, { ingress: VIP, serviceAnnotations: { [POOL]: "wan" } }), {
    metadata: { annotations: { [POOL]: "wan" } },
  });
  const moved = [{ ip: "203.0.113.11", ipMode: "VIP" }];
  assert.deepEqual(ensurePatch(done, { ingress: moved }), {
    status: { loadBalancer: { ingress: moved } },
  });
  assert.deepEqual(ensurePatch(done, {}), { status: { loadBalancer: { ingress: null } } });
});

Deno.test("cleanupPatch() clears the ingress and removes only our finalizer, together", () => {
  const held = service({ finalizers: [LOAD_BALANCER_CLEANUP_FINALIZER, "example.com/other"] }, VIP);
  assert.deepEqual(cleanupPatch(held), {
    metadata: { "$deleteFromPrimitiveList/finalizers": [LOAD_BALANCER_CLEANUP_FINALIZER] },
    status: { loadBalancer: { ingress: null } },
  });
  assert.deepEqual(cleanupPatch(service({}, VIP)), { status: { loadBalancer: { ingress: null } } });
  assert.equal(cleanupPatch(service({ finalizers: ["example.com/other"] })), undefined);
});
