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

Deno.test("BirdRoutes: a pod CIDR the render refused is refused at once with the decision's reason", async () => {
  let syncs = 0;
  const refused = {
    node: "w-evil",
    cidr: "10.244.1.0/24",
    kind: "no-machine" as const,
    reason: "its machine is not in the inventory",
  };
  const birdRoutes = new BirdRoutes({
    announcer: {
      configuredModel: undefined,
      model: {
        host: "cp-1",
        routerId: { family: 4, value: 1n },
        statics: [],
        peers: [],
        skipped: [],
        podRoutes: { announced: [], refused: [refused] },
      },
      sync: () => Promise.resolve(syncs++),
    },
    sessions: { established: () => false, poll: () => Promise.resolve() },
    waitMs: 2000,
    config: () => ({
      cluster: { name: "c", provider: "baremetal", cluster_cidr: ["10.244.0.0/16"] },
    }),
  });
  const began = performance.now();
  await assert.rejects(
    birdRoutes.createRoute("c", "uid", {
      name: "",
      targetNode: "w-evil",
      destinationCIDR: "10.244.1.0/24",
    }),
    /Not announcing 10\.244\.1\.0\/24 for Node "w-evil": its machine is not in the inventory/,
  );
  assert.equal(syncs, 1);
  assert.ok(performance.now() - began < 1500, "refused before the 2 s wait");
});
