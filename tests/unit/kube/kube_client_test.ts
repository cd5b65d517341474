import assert from "node:assert/strict";
import type { V1Node } from "@kubernetes/client-node";
import { createMetricsRegistry } from "../../../src/metrics/registry.ts";
import { createKubeClient, type KubeClient } from "../../../src/kube/kube_client.ts";
import { KubeApiError } from "../../../src/kube/ports.ts";
import type { RawWatchEvent } from "../../../src/kube/watch_lines.ts";
import { pollUntil } from "../../_support/poll.ts";

/** A loopback HTTP server answering with `handler`; records requests. */
function serve(handler: (request: Request) => Response | Promise<Response>) {
  const requests: Array<{ url: string; headers: Headers }> = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    requests.push({ url: request.url, headers: new Headers(request.headers) });
    return handler(request);
  });
  const client = createKubeClient(
    { server: `http://127.0.0.1:${server.addr.port}`, token: "t0k", source: "test" },
    { registry: createMetricsRegistry(), userAgent: "keelson-test/1" },
  );
  return {
    requests,
    client,
    async [Symbol.asyncDispose]() {
      client.close();
      await server.shutdown();
    },
  };
}

/** A streaming body whose chunks the test pushes. */
function stream() {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) });
  const encoder = new TextEncoder();
  return {
    body,
    push: (text: string) => controller.enqueue(encoder.encode(text)),
    close: () => controller.close(),
  };
}

async function collect(events: AsyncIterable<RawWatchEvent>, limit = Infinity) {
  const out: RawWatchEvent[] = [];
  for await (const event of events) {
    out.push(event);
    if (out.length >= limit) break;
  }
  return out;
}

Deno.test("KubeClient.list() follows continue tokens and sends the bearer token and User-Agent", async () => {
  await using s = serve((request) => {
    const url = new URL(request.url);
    const page = url.searchParams.get("continue");
    return Response.json(
      page === "p2"
        ? { items: [{ metadata: { name: "b" } }], metadata: { resourceVersion: "7" } }
        : {
          items: [{ metadata: { name: "a" } }],
          metadata: { resourceVersion: "6", continue: "p2" },
        },
    );
  });
  const result = await s.client.list("/api/v1/nodes", { limit: 1 });
  assert.deepEqual(result, {
    items: [{ metadata: { name: "a" } }, { metadata: { name: "b" } }],
    resourceVersion: "7",
    ignored: 0,
  });
  assert.equal(s.requests.length, 2);
  assert.equal(s.requests[0]!.headers.get("authorization"), "Bearer t0k");
  assert.equal(s.requests[0]!.headers.get("user-agent"), "keelson-test/1");
  assert.equal(new URL(s.requests[1]!.url).searchParams.get("limit"), "1");
});

Deno.test("KubeClient.list() starts one full list again when a continue token expires (410), and returns its items", async () => {
  let expired = false;
  await using s = serve((request) => {
    const page = new URL(request.url).searchParams.get("continue");
    if (page === "p2" && !expired) {
      expired = true;
      return Response.json({ kind: "Status", code: 410, reason: "Expired" }, { status: 410 });
    }
    return Response.json(
      page === "p2"
        ? { items: [{ metadata: { name: "b" } }], metadata: { resourceVersion: "9" } }
        : {
          items: [{ metadata: { name: "a" } }],
          metadata: { resourceVersion: "8", continue: "p2" },
        },
    );
  });
  const result = await s.client.list("/api/v1/nodes", { limit: 1 });
  assert.deepEqual(result, {
    items: [{ metadata: { name: "a" } }, { metadata: { name: "b" } }],
    resourceVersion: "9",
    ignored: 0,
  });
  assert.deepEqual(
    s.requests.map((r) => new URL(r.url).searchParams.get("continue")),
    [null, "p2", null, "p2"],
  );
});

Deno.test("KubeClient.list() throws KubeApiError with the Status of a 403", async () => {
  await using s = serve(() =>
    Response.json(
      { kind: "Status", reason: "Forbidden", message: "nodes is forbidden", code: 403 },
      {
        status: 403,
      },
    )
  );
  await assert.rejects(s.client.list("/api/v1/nodes"), (error: KubeApiError) => {
    assert.equal(error.code, 403);
    assert.equal(error.reason, "Forbidden");
    assert.match(error.message, /^Cannot list \/api\/v1\/nodes: nodes is forbidden/);
    return true;
  });
});

Deno.test("KubeClient.watch() joins events split across chunks and asks for bookmarks and a server timeout", async () => {
  const body = stream();
  await using s = serve(() => new Response(body.body));
  const events = collect(s.client.watch("/api/v1/nodes", { resourceVersion: "5" }), 3);
  body.push('{"type":"ADDED","object":{"metadata":{"na');
  body.push('me":"a"}}}\n{"type":"MODIFIED","object":{}}\n{"type":"BOOK');
  body.push('MARK","object":{"metadata":{"resourceVersion":"9"}}}\n');
  const got = await events;
  body.close();
  assert.deepEqual(got.map((e) => e.type), ["ADDED", "MODIFIED", "BOOKMARK"]);
  const query = new URL(s.requests[0]!.url).searchParams;
  assert.equal(query.get("watch"), "true");
  assert.equal(query.get("resourceVersion"), "5");
  assert.equal(query.get("allowWatchBookmarks"), "true");
  const timeout = Number(query.get("timeoutSeconds"));
  assert.ok(timeout >= 300 && timeout < 600, `timeoutSeconds ${timeout} is within 5–10 min`);
});

Deno.test("KubeClient.watch() ends without error when its signal aborts", async () => {
  const body = stream();
  await using s = serve(() => new Response(body.body));
  const controller = new AbortController();
  const events = s.client.watch("/api/v1/nodes", { signal: controller.signal })[
    Symbol.asyncIterator
  ]();
  body.push('{"type":"ADDED","object":{}}\n');
  assert.equal((await events.next()).value?.type, "ADDED");
  const next = events.next();
  controller.abort();
  assert.deepEqual(await next, { done: true, value: undefined });
});

Deno.test("KubeClient.watch() throws KubeApiError 410 on an ERROR event with an Expired Status", async () => {
  await using s = serve(() =>
    new Response(
      JSON.stringify({
        type: "ERROR",
        object: {
          kind: "Status",
          code: 410,
          reason: "Expired",
          message: "too old resource version",
        },
      }) + "\n",
    )
  );
  await assert.rejects(collect(s.client.watch("/api/v1/nodes")), (error: KubeApiError) => {
    assert.equal(error.code, 410);
    assert.equal(error.reason, "Expired");
    return true;
  });
});

Deno.test("KubeClient.watch() treats a connection silent past idleTimeoutMs as dead", async () => {
  const body = stream();
  await using s = serve(() => new Response(body.body));
  await assert.rejects(
    collect(s.client.watch("/api/v1/nodes", { idleTimeoutMs: 100 })),
    (error: KubeApiError) => {
      assert.equal(error.code, 0);
      assert.match(error.message, /silent for 100 ms/);
      return true;
    },
  );
  body.close();
});

Deno.test("KubeClient.watch() keeps a watch whose events come more often than idleTimeoutMs, for longer than it", async () => {
  const body = stream();
  await using s = serve(() => new Response(body.body));
  const event = (i: number) =>
    JSON.stringify({ type: "ADDED", object: { metadata: { name: `n${i}` } } }) + "\n";
  // 12 events 50 ms apart: 600 ms in all, each gap well inside the 200 ms bound
  const sender = (async () => {
    for (let i = 0; i < 12; i++) {
      body.push(event(i));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    body.close();
  })();
  const events = await collect(s.client.watch("/api/v1/nodes", { idleTimeoutMs: 200 }));
  await sender;
  assert.equal(events.length, 12);
});

Deno.test("KubeClient.rest goes through the transport and returns the server's JSON as it is", async () => {
  await using s = serve(() =>
    Response.json({
      apiVersion: "v1",
      kind: "Node",
      metadata: { name: "n1", creationTimestamp: "2026-01-02T03:04:05Z" },
    })
  );
  const node = await s.client.rest.get<V1Node>("/api/v1/nodes/n1", 'read node "n1"');
  assert.equal(node.metadata?.creationTimestamp, "2026-01-02T03:04:05Z");
  assert.equal(new URL(s.requests[0]!.url).pathname, "/api/v1/nodes/n1");
  assert.equal(s.requests[0]!.headers.get("authorization"), "Bearer t0k");
});

Deno.test("createKubeClient() counts requests in rest_client_requests_total", async () => {
  const registry = createMetricsRegistry();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => Response.json({ items: [], metadata: { resourceVersion: "1" } }),
  );
  const client: KubeClient = createKubeClient(
    { server: `http://127.0.0.1:${server.addr.port}`, source: "test" },
    { registry },
  );
  try {
    await client.list("/api/v1/services");
    const text = await registry.metrics();
    assert.match(
      text,
      /rest_client_requests_total\{code="200",method="GET",host="127\.0\.0\.1:\d+"\} 1/,
    );
    assert.match(
      text,
      /rest_client_request_duration_seconds_count\{verb="GET",host="127\.0\.0\.1:\d+"\} 1/,
    );
    assert.match(
      text,
      /rest_client_rate_limiter_duration_seconds_count\{verb="GET",host="127\.0\.0\.1:\d+"\} 1/,
    );
  } finally {
    client.close();
    await server.shutdown();
  }
});

Deno.test("KubeClient.watch() fails an event line past BODY_LIMITS.watchEvent and cancels the stream", async () => {
  let sent = 0;
  let cancelled = false;
  await using s = serve(() =>
    new Response(
      new ReadableStream<Uint8Array>({
        pull(controller) {
          sent += 1024 * 1024;
          controller.enqueue(new Uint8Array(1024 * 1024).fill(0x61));
        },
        cancel() {
          cancelled = true;
        },
      }),
    )
  );
  await assert.rejects(
    collect(s.client.watch("/api/v1/nodes")),
    (error: unknown) =>
      error instanceof KubeApiError && error.reason === "ResponseTooLarge" &&
      /^Cannot watch \/api\/v1\/nodes: the API server's answer is larger than 8 MiB, the most Keelson reads of one watch event/
        .test(error.message),
  );
  await pollUntil("the server's stream is cancelled", () => cancelled, { timeoutMs: 10_000 });
  assert.ok(sent < 64 * 1024 * 1024, `the server wrote ${sent} bytes`);
});

/** A list body of `bytes` spaces inside an otherwise empty NodeList, streamed. */
function hugeList(bytes: number): Response {
  let left = bytes;
  return new Response(
    new ReadableStream<Uint8Array>({
      pull(controller) {
        if (left <= 0) {
          controller.enqueue(new TextEncoder().encode('{"kind":"NodeList","items":[]}'));
          return controller.close();
        }
        const size = Math.min(left, 1024 * 1024);
        left -= size;
        controller.enqueue(new Uint8Array(size).fill(0x20));
      },
    }),
  );
}

Deno.test("KubeClient.list() asks again with a tenth of the items when a page is past its cap, and goes on at that size", async () => {
  await using s = serve((request) => {
    const query = new URL(request.url).searchParams;
    const limit = Number(query.get("limit"));
    // each item "weighs" 1 MiB: more than 8 per page is past the 8 MiB cap
    if (limit > 8) return hugeList(limit * 1024 * 1024);
    const from = Number(query.get("continue") ?? 0);
    const names = Array.from({ length: Math.min(limit, 40 - from) }, (_, i) => `n-${from + i}`);
    return Response.json({
      kind: "NodeList",
      apiVersion: "v1",
      metadata: {
        resourceVersion: "3",
        ...(from + limit < 40 ? { continue: String(from + limit) } : {}),
      },
      items: names.map((name) => ({ metadata: { name } })),
    });
  });
  const result = await s.client.list("/api/v1/nodes");
  assert.equal(result.items.length, 40);
  assert.deepEqual(
    s.requests.map((r) => new URL(r.url).searchParams.get("limit")),
    ["500", "50", "5", "5", "5", "5", "5", "5", "5", "5"],
  );
});

Deno.test("KubeClient.list() gives up with a clear error when even one item per page is past the cap", async () => {
  await using s = serve(() => hugeList(1024 * 1024 * 1024));
  await assert.rejects(
    s.client.list("/api/v1/nodes"),
    (error: unknown) =>
      error instanceof KubeApiError && error.reason === "ResponseTooLarge" &&
      /^Cannot list \/api\/v1\/nodes: the API server's answer is larger than 8 MiB/.test(
        error.message,
      ),
  );
  assert.deepEqual(
    s.requests.map((r) => new URL(r.url).searchParams.get("limit")),
    ["500", "50", "5", "1"],
  );
});
