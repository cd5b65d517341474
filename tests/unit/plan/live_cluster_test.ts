import assert from "node:assert/strict";
import { KubeApiError } from "../../../src/kube/ports.ts";
import type {
  ListPage,
  ListPageOptions,
  ReadOnlyKubeClient,
} from "../../../src/kube/read_only_client.ts";
import { listAllPages, readLiveCluster } from "../../../src/plan/live_cluster.ts";
import { readOnlyClientOver } from "../../../src/kube/read_only_client.ts";

/** A fake read-only client serving each path's items in pages of `limit`, tokens "p<offset>". */
function pagedClient(
  collections: Record<string, unknown[]>,
  options: { expireOnce?: string } = {},
): ReadOnlyKubeClient & { calls: { path: string; options: ListPageOptions }[] } {
  const calls: { path: string; options: ListPageOptions }[] = [];
  let expire = options.expireOnce;
  return {
    source: "fake",
    calls,
    listPage(path: string, pageOptions: ListPageOptions): Promise<ListPage> {
      calls.push({ path, options: pageOptions });
      if (expire !== undefined && pageOptions.continueToken === expire) {
        expire = undefined;
        return Promise.reject(new KubeApiError("Cannot list: expired (HTTP 410)", { code: 410 }));
      }
      const all = collections[path] ?? [];
      const from = pageOptions.continueToken ? Number(pageOptions.continueToken.slice(1)) : 0;
      const to = from + pageOptions.limit;
      return Promise.resolve({
        items: all.slice(from, to),
        continueToken: to < all.length ? `p${to}` : undefined,
        resourceVersion: "1",
        ignored: 0,
      });
    },
    close() {},
  };
}

const node = (name: string) => ({ metadata: { name } });

Deno.test("listAllPages follows continue tokens, one bounded page per request", async () => {
  const items = Array.from({ length: 7 }, (_, i) => node(`n-${i}`));
  const client = pagedClient({ "/api/v1/nodes": items });
  const read = await listAllPages(client, "/api/v1/nodes", { pageSize: 3 });
  assert.deepEqual(read.items, items);
  assert.equal(read.requests, 3);
  assert.deepEqual(
    client.calls.map((c) => [c.options.limit, c.options.continueToken]),
    [[3, undefined], [3, "p3"], [3, "p6"]],
  );
});

Deno.test("listAllPages restarts once from the first page when a continue token expired", async () => {
  const items = Array.from({ length: 5 }, (_, i) => node(`n-${i}`));
  const client = pagedClient({ "/api/v1/nodes": items }, { expireOnce: "p2" });
  const read = await listAllPages(client, "/api/v1/nodes", { pageSize: 2 });
  // every item exactly once: the pages read before the expiry are dropped, not doubled
  assert.deepEqual(read.items, items);
  assert.deepEqual(client.calls.map((c) => c.options.continueToken), [
    undefined,
    "p2",
    undefined,
    "p2",
    "p4",
  ]);
});

Deno.test("listAllPages refuses a collection above maxItems instead of truncating it", async () => {
  const client = pagedClient({
    "/api/v1/nodes": Array.from({ length: 9 }, (_, i) => node(`${i}`)),
  });
  await assert.rejects(
    listAllPages(client, "/api/v1/nodes", { pageSize: 4, maxItems: 8 }),
    /Cannot list \/api\/v1\/nodes: it holds more than 8 items/,
  );
});

Deno.test("listAllPages stops at the signal between pages", async () => {
  const stop = new AbortController();
  const client = pagedClient({ "/api/v1/nodes": [node("a"), node("b"), node("c")] });
  const listPage = client.listPage.bind(client);
  client.listPage = (path, options) => {
    stop.abort(new DOMException("deadline", "TimeoutError"));
    return listPage(path, options);
  };
  await assert.rejects(
    listAllPages(client, "/api/v1/nodes", { pageSize: 1, signal: stop.signal }),
    (error: unknown) => error instanceof DOMException && error.name === "TimeoutError",
  );
  assert.equal(client.calls.length, 1);
});

Deno.test("readLiveCluster reads Nodes, Services, EndpointSlices and heartbeat Leases through the snapshot checks", async () => {
  const client = pagedClient({
    "/api/v1/nodes": [node("n-1"), node("n-2")],
    "/api/v1/services": [{
      metadata: { name: "web", namespace: "default" },
      spec: { type: "LoadBalancer", ports: [{ port: 80 }] },
    }],
    "/apis/discovery.k8s.io/v1/endpointslices": [{
      metadata: { name: "web-x", namespace: "default" },
      endpoints: [{ nodeName: "n-1", conditions: { ready: true } }],
    }],
    "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases": [{
      metadata: { name: "keelson-host-cp-1", namespace: "kube-system" },
      spec: { leaseDurationSeconds: 15 },
    }],
  });
  const read = await readLiveCluster(client, { pageSize: 1 });
  assert.deepEqual(read.snapshot.nodes.map((n) => n.metadata?.name), ["n-1", "n-2"]);
  assert.equal(read.snapshot.services.length, 1);
  assert.equal(read.snapshot.endpointSlices.length, 1);
  assert.deepEqual(read.snapshot.leases.map((l) => l.metadata?.name), ["keelson-host-cp-1"]);
  // one page per item, plus none extra: the last page carries no continue token
  assert.equal(read.requests, 5);
});

Deno.test("readLiveCluster refuses a malformed object, naming the list, item and field", async () => {
  const client = pagedClient({
    "/api/v1/nodes": [node("n-1"), {
      metadata: { name: "n-2" },
      spec: { podCIDRs: "10.0.0.0/24" },
    }],
  });
  await assert.rejects(
    readLiveCluster(client),
    /Cannot read cluster state list \/api\/v1\/nodes item 1 \(Node "n-2"\): spec\.podCIDRs: must be a list/,
  );
});

Deno.test("readLiveCluster counts a Service inside the NodeList and a Node inside the LeaseList as neither", async () => {
  const lists: Record<string, unknown> = {
    "/api/v1/nodes": {
      kind: "NodeList",
      apiVersion: "v1",
      items: [
        node("n-1"),
        {
          kind: "Service",
          apiVersion: "v1",
          metadata: { name: "forged", namespace: "default" },
          spec: { type: "LoadBalancer", ports: [{ port: 80 }] },
        },
      ],
    },
    "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases": {
      kind: "LeaseList",
      apiVersion: "coordination.k8s.io/v1",
      items: [{ kind: "Node", apiVersion: "v1", metadata: { name: "n-forged" } }],
    },
  };
  const client = readOnlyClientOver({
    fetch: (url: string) =>
      Promise.resolve(Response.json(lists[url.split("?")[0]!] ?? { items: [] })),
    close() {},
  }, "fake");
  const read = await readLiveCluster(client);
  assert.deepEqual(read.snapshot.nodes.map((n) => n.metadata?.name), ["n-1"]);
  assert.equal(read.snapshot.services.length, 0);
  assert.equal(read.snapshot.leases.length, 0);
  assert.deepEqual(read.ignored, {
    "/api/v1/nodes": 1,
    "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases": 1,
  });
});
