import assert from "node:assert/strict";
import { createMetricsRegistry } from "../../../src/metrics/registry.ts";
import { createHttpTransport, TOKEN_FILE_REFRESH_MS } from "../../../src/kube/http_transport.ts";
import { ConnectionReplacedError, RequestTimeoutError } from "../../../src/kube/connection.ts";
import { pollUntil } from "../../_support/poll.ts";

function echoAuthorization() {
  return Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) => new Response(request.headers.get("authorization") ?? ""),
  );
}

Deno.test("createHttpTransport() re-reads a token file once the refresh interval has passed", async () => {
  const server = echoAuthorization();
  const dir = await Deno.makeTempDir();
  let now = 0;
  const tokenFile = `${dir}/token`;
  await Deno.writeTextFile(tokenFile, "first\n");
  const transport = createHttpTransport(
    { server: `http://127.0.0.1:${server.addr.port}`, tokenFile, source: "test" },
    { registry: createMetricsRegistry(), now: () => now },
  );
  const auth = async () => await (await transport.fetch("/api")).text();
  try {
    assert.equal(await auth(), "Bearer first");
    await Deno.writeTextFile(tokenFile, "second\n");
    now += TOKEN_FILE_REFRESH_MS - 1;
    assert.equal(await auth(), "Bearer first", "cached within the interval");
    now += 1;
    assert.equal(await auth(), "Bearer second");
    await Deno.remove(tokenFile);
    now += TOKEN_FILE_REFRESH_MS;
    assert.equal(await auth(), "Bearer second", "a vanished file keeps the last token");
  } finally {
    transport.close();
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("createHttpTransport() sends basic auth for username and password", async () => {
  const server = echoAuthorization();
  const transport = createHttpTransport(
    {
      server: `http://127.0.0.1:${server.addr.port}`,
      username: "admin",
      password: "pw",
      source: "test",
    },
    { registry: createMetricsRegistry() },
  );
  try {
    assert.equal(await (await transport.fetch("/api")).text(), `Basic ${btoa("admin:pw")}`);
  } finally {
    transport.close();
    await server.shutdown();
  }
});

Deno.test("createHttpTransport() can share one registry between two clients", () => {
  const registry = createMetricsRegistry();
  const settings = { server: "http://127.0.0.1:1", source: "test" };
  const a = createHttpTransport(settings, { registry });
  const b = createHttpTransport(settings, { registry });
  a.close();
  b.close();
  assert.ok(registry.getSingleMetric("rest_client_requests_total"));
});

/** A server that accepts requests and never answers until released. */
function hangingServer() {
  const release = Promise.withResolvers<void>();
  const held = { count: 0 };
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      if (new URL(request.url).pathname === "/fast") return new Response("fast");
      held.count++;
      await release.promise;
      return new Response("late");
    },
  );
  return { server, held, release: () => release.resolve() };
}

async function sample(registry: ReturnType<typeof createMetricsRegistry>, text: string) {
  return (await registry.metrics()).split("\n").find((line) => line.startsWith(text));
}

Deno.test("createHttpTransport() fails a request at its deadline, counts <timeout> and replaces the connection", async () => {
  const { server, release } = hangingServer();
  const registry = createMetricsRegistry();
  const transport = createHttpTransport(
    { server: `http://127.0.0.1:${server.addr.port}`, source: "test" },
    { registry, requestTimeoutMs: 200, pingIntervalMs: 0 },
  );
  try {
    const began = performance.now();
    await assert.rejects(transport.fetch("/slow"), RequestTimeoutError);
    assert.ok(performance.now() - began < 5_000);
    assert.match(
      (await sample(registry, 'rest_client_requests_total{code="<timeout>"')) ?? "",
      / 1$/,
    );
    assert.equal(transport.generation, 2, "the connection was replaced");
    assert.match(
      (await sample(
        registry,
        'keelson_kube_connection_replacements_total{reason="request-deadline"}',
      )) ?? "",
      / 1$/,
    );
    assert.equal(await (await transport.fetch("/fast")).text(), "fast", "the new one works");
  } finally {
    transport.close();
    release();
    await server.shutdown();
  }
});

Deno.test("createHttpTransport() fails a body that stalls after the headers at its deadline", async () => {
  const stalled = Promise.withResolvers<void>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(new TextEncoder().encode('{"items": ['));
        await stalled.promise; // the rest never comes (a peer gone silent mid-answer)
        controller.close();
      },
    });
    return new Response(body, { headers: { "content-type": "application/json" } });
  });
  const transport = createHttpTransport(
    { server: `http://127.0.0.1:${server.addr.port}`, source: "test" },
    { registry: createMetricsRegistry(), requestTimeoutMs: 300, pingIntervalMs: 0 },
  );
  try {
    const began = performance.now();
    await assert.rejects(transport.fetch("/api/v1/nodes"), RequestTimeoutError);
    assert.ok(performance.now() - began < 5_000);
  } finally {
    transport.close();
    stalled.resolve();
    await server.shutdown();
  }
});

Deno.test("createHttpTransport() fails every open request when the connection is replaced", async () => {
  const { server, held, release } = hangingServer();
  const transport = createHttpTransport(
    { server: `http://127.0.0.1:${server.addr.port}`, source: "test" },
    { registry: createMetricsRegistry(), requestTimeoutMs: 0, pingIntervalMs: 0 },
  );
  try {
    const open = [transport.fetch("/a"), transport.fetch("/b?watch=true")];
    await pollUntil("both requests at the server", () => held.count === 2);
    assert.equal(transport.replaceConnection("ping-timeout", "test"), true);
    for (const request of open) await assert.rejects(request, ConnectionReplacedError);
  } finally {
    transport.close();
    release();
    await server.shutdown();
  }
});

Deno.test("createHttpTransport() ends a watch body read when the caller aborts", async () => {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () =>
    new Response(
      new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('{"type":"ADDED","object":{}}\n'));
        },
      }),
    ));
  const transport = createHttpTransport(
    { server: `http://127.0.0.1:${server.addr.port}`, source: "test" },
    { registry: createMetricsRegistry(), pingIntervalMs: 0 },
  );
  try {
    const stop = new AbortController();
    const response = await transport.fetch("/w?watch=true", { signal: stop.signal });
    const reader = response.body!.getReader();
    await reader.read();
    const pending = reader.read();
    stop.abort();
    await assert.rejects(pending, (error: Error) => error.name === "AbortError");
  } finally {
    transport.close();
    await server.shutdown();
  }
});

Deno.test("createHttpTransport() sends requests with a body over HTTP/1.1, the rest over HTTP/2", async () => {
  const testdata = new URL("../server/testdata/", import.meta.url);
  const listener = Deno.listenTls({
    hostname: "127.0.0.1",
    port: 0,
    cert: await Deno.readTextFile(new URL("tls_cert.pem", testdata)),
    key: await Deno.readTextFile(new URL("tls_key.pem", testdata)),
    alpnProtocols: ["h2", "http/1.1"],
  });
  // each connection's negotiated protocol; an HTTP/1.1 request gets a 200, HTTP/2 is just closed
  const protocols: (string | null)[] = [];
  const serving = (async () => {
    for await (const conn of listener) {
      const { alpnProtocol } = await conn.handshake();
      protocols.push(alpnProtocol);
      if (alpnProtocol === "http/1.1") {
        await conn.read(new Uint8Array(64 * 1024));
        await conn.write(
          new TextEncoder().encode(
            "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok",
          ),
        );
      }
      conn.close();
    }
  })();
  const transport = createHttpTransport(
    {
      server: `https://127.0.0.1:${listener.addr.port}`,
      caPem: await Deno.readTextFile(new URL("ca.pem", testdata)),
      source: "test",
    },
    { registry: createMetricsRegistry(), pingIntervalMs: 0 },
  );
  try {
    const put = await transport.fetch("/api/v1/nodes/a", { method: "PUT", body: "{}" });
    assert.equal(await put.text(), "ok");
    assert.deepEqual(protocols, ["http/1.1"]);
    await assert.rejects(transport.fetch("/api/v1/nodes/a"));
    assert.deepEqual(protocols, ["http/1.1", "h2"]);
  } finally {
    transport.close();
    listener.close();
    await serving.catch(() => {});
  }
});
