import assert from "node:assert/strict";
import { KubeApiError } from "../../../src/kube/ports.ts";
import { readOnlyClientOver } from "../../../src/kube/read_only_client.ts";
import { createHttpTransport, type TransportRequest } from "../../../src/kube/http_transport.ts";
import { createMetricsRegistry } from "../../../src/metrics/registry.ts";

/** A transport answering every request with `answer`, recording what was asked. */
function fakeTransport(answer: () => Response) {
  const requests: { url: string; request: TransportRequest | undefined }[] = [];
  return {
    requests,
    fetch(url: string, request?: TransportRequest): Promise<Response> {
      requests.push({ url, request });
      return Promise.resolve(answer());
    },
    close() {},
  };
}

const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

Deno.test("the read-only client has no method that writes", () => {
  const client = readOnlyClientOver(fakeTransport(() => json({})), "fake");
  assert.deepEqual(Object.keys(client).sort(), ["close", "listPage", "source"]);
});

Deno.test("listPage sends a GET with limit and continue, and returns the page and its token", async () => {
  const transport = fakeTransport(() =>
    json({ metadata: { continue: "next-1" }, items: [{ metadata: { name: "a" } }] })
  );
  const client = readOnlyClientOver(transport, "fake");
  const page = await client.listPage("/api/v1/nodes", { limit: 2, continueToken: "tok/+" });
  assert.deepEqual(page, {
    items: [{ metadata: { name: "a" } }],
    continueToken: "next-1",
    resourceVersion: "",
    ignored: 0,
  });
  assert.equal(transport.requests.length, 1);
  const { url, request } = transport.requests[0]!;
  assert.equal(url, "/api/v1/nodes?limit=2&continue=tok%2F%2B");
  // no method: fetch's default, GET; no body
  assert.equal(request?.method, undefined);
  assert.equal(request?.body, undefined);
});

Deno.test("listPage: the last page has no token; an API error keeps its code and message", async () => {
  const last = readOnlyClientOver(fakeTransport(() => json({ metadata: {}, items: [] })), "f");
  assert.deepEqual(await last.listPage("/api/v1/nodes", { limit: 1 }), {
    items: [],
    continueToken: undefined,
    resourceVersion: "",
    ignored: 0,
  });
  const forbidden = readOnlyClientOver(
    fakeTransport(() =>
      json({
        kind: "Status",
        reason: "Forbidden",
        message: 'nodes is forbidden: User "x" cannot list resource "nodes"',
      }, 403)
    ),
    "f",
  );
  await assert.rejects(
    forbidden.listPage("/api/v1/nodes", { limit: 1 }),
    (error: unknown) =>
      error instanceof KubeApiError && error.code === 403 &&
      /Cannot list \/api\/v1\/nodes: nodes is forbidden/.test(error.message),
  );
});

Deno.test("listPage refuses an answer whose items is not a list", async () => {
  const client = readOnlyClientOver(fakeTransport(() => json({ items: { a: 1 } })), "f");
  await assert.rejects(client.listPage("/api/v1/nodes", { limit: 1 }), /items is not a list/);
});

Deno.test("listPage leaves out and counts items of another kind or apiVersion than the collection's", async () => {
  const node = { metadata: { name: "n-1" } };
  const pages: Record<string, unknown> = {
    // a Service inside a NodeList, and a Node of another group's version
    "/api/v1/nodes": {
      kind: "NodeList",
      apiVersion: "v1",
      items: [
        node,
        { kind: "Service", apiVersion: "v1", metadata: { name: "svc" } },
        { kind: "Node", apiVersion: "example.com/v1", metadata: { name: "n-2" } },
        { kind: "Node", apiVersion: "v1", metadata: { name: "n-3" } },
      ],
    },
    // a Node inside a LeaseList
    "/apis/coordination.k8s.io/v1/namespaces/keelson-heartbeats/leases": {
      kind: "LeaseList",
      apiVersion: "coordination.k8s.io/v1",
      items: [{ kind: "Node", apiVersion: "v1", metadata: { name: "cp-1" } }, {
        metadata: { name: "cp-2" },
      }],
    },
    // a whole ServiceList where Services... were not asked for
    "/apis/discovery.k8s.io/v1/endpointslices": {
      kind: "ServiceList",
      apiVersion: "v1",
      items: [{ metadata: { name: "a" } }],
    },
  };
  const client = readOnlyClientOver(
    fakeTransport(() => json(pages[currentPath])),
    "f",
  );
  let currentPath = "";
  const read = async (path: string) => {
    currentPath = path;
    return await client.listPage(path, { limit: 10 });
  };
  const nodes = await read("/api/v1/nodes");
  assert.deepEqual(nodes.items.map((i) => (i as typeof node).metadata.name), ["n-1", "n-3"]);
  assert.equal(nodes.ignored, 2);
  const leases = await read("/apis/coordination.k8s.io/v1/namespaces/keelson-heartbeats/leases");
  assert.deepEqual(leases.items, [{ metadata: { name: "cp-2" } }]);
  assert.equal(leases.ignored, 1);
  const slices = await read("/apis/discovery.k8s.io/v1/endpointslices");
  assert.deepEqual(slices.items, []);
  assert.equal(slices.ignored, 1);
});

Deno.test("listPage leaves out an object named beyond Kubernetes' limits (a 1 MiB Node name)", async () => {
  const client = readOnlyClientOver(
    fakeTransport(() =>
      json({
        items: [{ metadata: { name: "n".repeat(1024 * 1024) } }, { metadata: { name: "ok" } }],
      })
    ),
    "f",
  );
  const page = await client.listPage("/api/v1/nodes", { limit: 10 });
  assert.deepEqual(page.items, [{ metadata: { name: "ok" } }]);
  assert.equal(page.ignored, 1);
});

Deno.test("listPage over the real transport refuses a page past BODY_LIMITS.listPage and stops reading it", async () => {
  let sent = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () =>
    new Response(
      new ReadableStream<Uint8Array>({
        pull(controller) {
          sent += 1024 * 1024;
          controller.enqueue(new Uint8Array(1024 * 1024).fill(0x20));
        },
      }),
    ));
  const client = readOnlyClientOver(
    createHttpTransport(
      { server: `http://127.0.0.1:${server.addr.port}`, source: "test" },
      { registry: createMetricsRegistry(), pingIntervalMs: 0 },
    ),
    "test",
  );
  try {
    await assert.rejects(
      client.listPage("/api/v1/nodes", { limit: 500 }),
      (error: unknown) =>
        error instanceof KubeApiError && error.code === 0 && error.reason === "ResponseTooLarge" &&
        /^Cannot list \/api\/v1\/nodes: the API server's answer is larger than 8 MiB, the most Keelson reads of one list page/
          .test(error.message),
    );
    assert.ok(sent < 64 * 1024 * 1024, `the server wrote ${sent} bytes`);
  } finally {
    client.close();
    await server.shutdown();
  }
});
