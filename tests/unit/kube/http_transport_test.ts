import assert from "node:assert/strict";
import { createMetricsRegistry } from "../../../src/metrics/registry.ts";
import { createHttpTransport, TOKEN_FILE_REFRESH_MS } from "../../../src/kube/http_transport.ts";

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
