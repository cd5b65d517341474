import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { createServer } from "../../../src/server/create_server.ts";
import { HealthChecks } from "../../../src/server/health_checks.ts";
import { parseListen, serve } from "../../../src/server/serve.ts";

function app() {
  return createServer({
    registry: new Registry(),
    health: new HealthChecks(),
    ready: () => ({ ok: true, reasons: [] }),
  });
}

Deno.test("parseListen() accepts IPv4, bracketed IPv6 and a bare port", () => {
  assert.deepEqual(parseListen("127.0.0.1:10258"), { hostname: "127.0.0.1", port: 10258 });
  assert.deepEqual(parseListen("[::1]:0"), { hostname: "::1", port: 0 });
  assert.deepEqual(parseListen(":10258"), { hostname: "0.0.0.0", port: 10258 });
  assert.deepEqual(parseListen("localhost:8080"), { hostname: "localhost", port: 8080 });
});

Deno.test("parseListen() rejects an address without a valid port", () => {
  for (const bad of ["127.0.0.1", "::1:10258", "127.0.0.1:70000", "host:port", "[::1]"]) {
    assert.throws(() => parseListen(bad), TypeError, bad);
  }
});

Deno.test("serve() answers on 127.0.0.1 port 0 and stops when the signal aborts", async () => {
  const aborter = new AbortController();
  const serving = await serve(app(), { listen: "127.0.0.1:0", signal: aborter.signal });
  try {
    assert.equal(serving.addr.hostname, "127.0.0.1");
    assert.ok(serving.addr.port > 0);
    assert.equal(serving.url, `http://127.0.0.1:${serving.addr.port}`);
    const res = await fetch(`${serving.url}/healthz`);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), "ok");
  } finally {
    aborter.abort();
    await serving.finished;
  }
});

Deno.test("serve() rejects a certificate without a key", async () => {
  await assert.rejects(
    serve(app(), {
      listen: "127.0.0.1:0",
      certFile: "/nonexistent.pem",
      signal: AbortSignal.abort(),
    }),
    TypeError,
  );
});

Deno.test("serve() serves HTTPS on [::1] when a certificate and key are given", async () => {
  const dir = new URL("./testdata/", import.meta.url);
  const certFile = new URL("tls_cert.pem", dir).pathname;
  const keyFile = new URL("tls_key.pem", dir).pathname;
  const aborter = new AbortController();
  const serving = await serve(app(), {
    listen: "[::1]:0",
    certFile,
    keyFile,
    signal: aborter.signal,
  });
  const caFile = new URL("ca.pem", dir).pathname;
  const client = Deno.createHttpClient({ caCerts: [await Deno.readTextFile(caFile)] });
  try {
    assert.match(serving.url, /^https:\/\/\[::1\]:\d+$/);
    const res = await fetch(`${serving.url}/readyz`, { client });
    assert.equal(res.status, 200);
    assert.equal(await res.text(), "ok");
  } finally {
    client.close();
    aborter.abort();
    await serving.finished;
  }
});
