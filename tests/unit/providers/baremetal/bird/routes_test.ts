import assert from "node:assert/strict";
import { BirdRoutes } from "../../../../../providers/baremetal/bird/routes.ts";
import type { Route } from "../../../../../src/cloud/provider.ts";

const RACK_B: Route = {
  name: "w-b/10.244.2.0/24",
  targetNode: "w-b",
  destinationCIDR: "10.244.2.0/24",
};

function routes(reported: Route[] | undefined) {
  let syncs = 0;
  const birdRoutes = new BirdRoutes({
    announcer: {
      configuredModel: undefined,
      sync: () => Promise.resolve(syncs++),
    },
    sessions: { established: () => false, poll: () => Promise.resolve() },
    ...(reported ? { reported: () => reported } : {}),
    waitMs: 300,
    config: () => ({
      cluster: { name: "c", provider: "baremetal", cluster_cidr: ["10.244.0.0/16"] },
    }),
  });
  return { birdRoutes, syncs: () => syncs };
}

Deno.test("BirdRoutes: a route another host reports counts, though this host's BIRD does not carry it", async () => {
  const { birdRoutes, syncs } = routes([RACK_B]);
  assert.deepEqual(await birdRoutes.listRoutes("c"), [RACK_B]);
  await birdRoutes.createRoute("c", "uid", { ...RACK_B, name: "" });
  assert.equal(syncs(), 1);
});

Deno.test("BirdRoutes: without a report createRoute fails after its wait, saying why", async () => {
  for (const reported of [[], undefined]) {
    const { birdRoutes } = routes(reported);
    assert.deepEqual(await birdRoutes.listRoutes("c"), []);
    await assert.rejects(
      birdRoutes.createRoute("c", "uid", { ...RACK_B, name: "" }),
      reported ? /no host reports it announced/ : /has not accepted any configuration/,
    );
  }
});

Deno.test("BirdRoutes: a pod CIDR outside [cluster] cluster_cidr is refused at once, without a render", async () => {
  const { birdRoutes, syncs } = routes([]);
  const began = performance.now();
  for (const cidr of ["0.0.0.0/1", "10.0.0.0/8", "10.245.1.0/24", "fd00::/64"]) {
    await assert.rejects(
      birdRoutes.createRoute("c", "uid", { name: "", targetNode: "w-evil", destinationCIDR: cidr }),
      /Not announcing .*: Node "w-evil": its pod CIDR is outside \[cluster\] cluster_cidr \(10\.244\.0\.0\/16\)/,
    );
  }
  assert.equal(syncs(), 0);
  assert.ok(performance.now() - began < 250, "refused before the 300 ms wait");
});
