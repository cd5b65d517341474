/**
 * What one request can carry, on a real kube-apiserver, and how many writes `keelson run` makes
 * per LoadBalancer Service (at most 3 on the happy path, deletion alike).
 *
 * The first steps pin the API behaviour src/controllers/service/status_patch.ts relies on; the
 * last ones count the agent's writes from the apiserver's own `apiserver_request_total` (status
 * patches) and the Events it stored (each a POST, each repeat a PATCH). Figures are printed with
 * a `FIGURE` prefix.
 */
import assert from "node:assert/strict";
import type { CoreV1Event, V1Service } from "@kubernetes/client-node";
import { type ControlPlane, integrationTest, startControlPlane } from "./_harness/control_plane.ts";
import {
  CLEANUP_FINALIZER,
  createLbService,
  createNamespace,
  figure,
  getService,
  lbInventory,
  POOL_ANNOTATION,
  startLeadingAgent,
} from "./_harness/lb_services.ts";
import { registerNode } from "./_harness/kubelet.ts";
import { waitFor } from "./_harness/wait.ts";
import { quietFor } from "./_harness/quiet.ts";

const SMP = "application/strategic-merge-patch+json";
const OTHER_FINALIZER = "example.com/other";
/** Services created at once for the write count. */
const N = 10;

/** The apiserver's count of PATCH requests on services/status (any code). */
async function statusPatches(cp: ControlPlane): Promise<number> {
  const response = await cp.request<string>("GET", "/metrics");
  assert.equal(response.status, 200);
  let total = 0;
  for (const line of String(response.body).split("\n")) {
    if (
      line.startsWith("apiserver_request_total{") && line.includes('resource="services"') &&
      line.includes('subresource="status"') && line.includes('verb="PATCH"')
    ) total += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return total;
}

/** Event writes in a namespace: one POST per Event object, one PATCH per repeat. */
async function eventWrites(cp: ControlPlane, namespace: string): Promise<CoreV1Event[]> {
  const list = await cp.requestOk<{ items: CoreV1Event[] }>(
    "GET",
    `/api/v1/namespaces/${namespace}/events`,
  );
  return list.items;
}

function writesOf(events: CoreV1Event[]): number {
  return events.reduce((sum, e) => sum + Math.max(1, e.count ?? 1, e.series?.count ?? 1), 0);
}

integrationTest(
  "one services/status patch carries the finalizer, annotation and ingress; keelson writes at most 3 times per Service",
  async (t) => {
    await using cp = await startControlPlane();
    const base = "/api/v1/namespaces/default/services";

    await t.step(
      "a status patch keeps metadata (finalizers as a set, annotations) and drops spec",
      async () => {
        await cp.requestOk("POST", base, {
          metadata: { name: "probe", finalizers: [OTHER_FINALIZER] },
          spec: { type: "LoadBalancer", ports: [{ port: 80 }] },
        });
        const patched = await cp.requestOk<V1Service>("PATCH", `${base}/probe/status`, {
          metadata: {
            finalizers: [CLEANUP_FINALIZER],
            annotations: { [POOL_ANNOTATION]: "lan" },
          },
          spec: { type: "ClusterIP" },
          status: { loadBalancer: { ingress: [{ ip: "203.0.113.5", ipMode: "VIP" }] } },
        }, SMP);
        assert.deepEqual(
          [...patched.metadata!.finalizers!].sort(),
          [
            OTHER_FINALIZER,
            CLEANUP_FINALIZER,
          ].sort(),
        );
        assert.equal(patched.metadata!.annotations?.[POOL_ANNOTATION], "lan");
        assert.equal(patched.spec!.type, "LoadBalancer", "spec is reset by the status strategy");
        assert.deepEqual(patched.status!.loadBalancer!.ingress, [
          { ip: "203.0.113.5", ipMode: "VIP" },
        ]);
      },
    );

    await t.step("the ingress list is replaced whole by a strategic-merge patch", async () => {
      const patched = await cp.requestOk<V1Service>("PATCH", `${base}/probe/status`, {
        status: { loadBalancer: { ingress: [{ ip: "203.0.113.7", ipMode: "VIP" }] } },
      }, SMP);
      assert.deepEqual(patched.status!.loadBalancer!.ingress, [
        { ip: "203.0.113.7", ipMode: "VIP" },
      ]);
    });

    await t.step(
      "a deleting Service: no finalizer can be added; clearing ours keeps the others, removing the last deletes it",
      async () => {
        await cp.requestOk("DELETE", `${base}/probe`);
        const refused = await cp.request("PATCH", `${base}/probe/status`, {
          metadata: { finalizers: ["example.com/late"] },
        }, SMP);
        assert.equal(refused.status, 422);
        const cleared = await cp.requestOk<V1Service>("PATCH", `${base}/probe/status`, {
          metadata: { "$deleteFromPrimitiveList/finalizers": [CLEANUP_FINALIZER] },
          status: { loadBalancer: { ingress: null } },
        }, SMP);
        assert.deepEqual(cleared.metadata!.finalizers, [OTHER_FINALIZER]);
        assert.deepEqual(cleared.status!.loadBalancer, {});
        await cp.requestOk("PATCH", `${base}/probe/status`, {
          metadata: { "$deleteFromPrimitiveList/finalizers": [OTHER_FINALIZER] },
        }, SMP);
        assert.equal(await getService(cp, "default", "probe"), undefined);
      },
    );

    const dir = await Deno.makeTempDir({ prefix: "keelson-writes-" });
    const configPath = `${dir}/keelson.toml`;
    await Deno.writeTextFile(
      configPath,
      lbInventory({ pools: [{ name: "lan", addresses: ["192.0.2.0/27"] }] }),
    );
    // one eligible Node, so no UnAvailableLoadBalancer warning is part of the count
    await registerNode(cp, "cp-1", {
      providedNodeIp: "10.0.0.11",
      providerID: "baremetal://cp-1",
      initialized: true,
    });
    const agent = await startLeadingAgent(cp, dir, configPath, "writes");
    try {
      const names = Array.from({ length: N }, (_, i) => `web-${i}`);
      await createNamespace(cp, "writes");

      await t.step(
        `${N} Services: ingress, finalizer, pool and EnsuredLoadBalancer in at most 3 writes each`,
        async () => {
          const before = await statusPatches(cp);
          await Promise.all(names.map((name) => createLbService(cp, "writes", name)));
          const done = (s: V1Service | undefined) =>
            (s?.status?.loadBalancer?.ingress?.length ?? 0) > 0 &&
            s?.metadata?.finalizers?.includes(CLEANUP_FINALIZER) &&
            s?.metadata?.annotations?.[POOL_ANNOTATION] === "lan";
          await waitFor(async () => {
            const all = await Promise.all(names.map((name) => getService(cp, "writes", name)));
            return all.every(done);
          }, { timeoutMs: 60_000, message: "every Service fully ensured" });
          await waitFor(async () => {
            const events = await eventWrites(cp, "writes");
            return events.filter((e) => e.reason === "EnsuredLoadBalancer").length === N;
          }, { timeoutMs: 30_000, message: `${N} EnsuredLoadBalancer events` });
          for (const name of names) {
            const s = await getService(cp, "writes", name);
            assert.equal(s?.status?.loadBalancer?.ingress?.[0]?.ipMode, "VIP");
          }
          // trailing writes may come, but none past the budget of 3 per Service
          const ensured = (await statusPatches(cp)) - before +
            writesOf(await eventWrites(cp, "writes"));
          await quietFor(cp, {
            what: "writes after every Service was ensured",
            paths: ["/api/v1/namespaces/writes/services", "/api/v1/namespaces/writes/events"],
            forMs: 3_000,
            allowed: 3 * N - ensured,
          });
          const patches = (await statusPatches(cp)) - before;
          const events = await eventWrites(cp, "writes");
          const writes = patches + writesOf(events);
          figure(
            `writes per Service, ensure: ${(writes / N).toFixed(2)} ` +
              `(status patches ${patches}, event writes ${writesOf(events)} for ${N} Services; ` +
              `reasons: ${[...new Set(events.map((e) => e.reason))].join(", ")})`,
          );
          assert.ok(writes <= 3 * N, `${writes} writes for ${N} Services`);
          assert.ok(patches >= N, "each Service needed its status patch");
        },
      );

      await t.step(`deleting the ${N} Services takes at most 3 writes each`, async () => {
        const before = await statusPatches(cp);
        const eventsBefore = writesOf(await eventWrites(cp, "writes"));
        await Promise.all(
          names.map((name) => cp.requestOk("DELETE", `/api/v1/namespaces/writes/services/${name}`)),
        );
        await waitFor(async () => {
          const all = await Promise.all(names.map((name) => getService(cp, "writes", name)));
          return all.every((s) => s === undefined);
        }, { timeoutMs: 60_000, message: "every Service gone" });
        await waitFor(async () => {
          const events = await eventWrites(cp, "writes");
          return events.filter((e) => e.reason === "DeletedLoadBalancer").length === N;
        }, { timeoutMs: 30_000, message: `${N} DeletedLoadBalancer events` });
        const deleted = (await statusPatches(cp)) - before +
          writesOf(await eventWrites(cp, "writes")) - eventsBefore;
        await quietFor(cp, {
          what: "writes after every Service was deleted",
          paths: ["/api/v1/namespaces/writes/services", "/api/v1/namespaces/writes/events"],
          forMs: 3_000,
          allowed: 3 * N - deleted,
        });
        const patches = (await statusPatches(cp)) - before;
        const eventsAfter = writesOf(await eventWrites(cp, "writes"));
        const writes = patches + eventsAfter - eventsBefore;
        figure(
          `writes per Service, delete: ${(writes / N).toFixed(2)} ` +
            `(status patches ${patches}, event writes ${eventsAfter - eventsBefore})`,
        );
        assert.ok(writes <= 3 * N, `${writes} writes for ${N} deletions`);
      });
    } finally {
      await agent.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
);
