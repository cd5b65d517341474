import assert from "node:assert/strict";
import { Counter, Registry } from "prom-client";
import { createServer, type ServerDeps } from "../../../src/server/create_server.ts";
import { HealthChecks } from "../../../src/server/health_checks.ts";

function setup(overrides: Partial<ServerDeps> = {}) {
  const registry = new Registry();
  new Counter({ name: "keelson_test_total", help: "A test counter.", registers: [registry] }).inc(
    3,
  );
  const health = new HealthChecks();
  let readiness = { ok: true, reasons: [] as string[] };
  const app = createServer({ registry, health, ready: () => readiness, ...overrides });
  return {
    app,
    health,
    setReady: (ok: boolean, reasons: string[] = []) => (readiness = { ok, reasons }),
  };
}

Deno.test("createServer() /healthz answers ok from the default ping check", async () => {
  const { app } = setup();
  const res = await app.request("/healthz");
  assert.equal(res.status, 200);
  assert.equal(await res.text(), "ok");
  assert.equal(res.headers.get("Cache-Control"), "no-cache, private");
  assert.equal(res.headers.get("X-Content-Type-Options"), "nosniff");
});

Deno.test("createServer() /healthz?verbose lists each check and ends with check passed", async () => {
  const { app, health } = setup();
  health.add("leaderElection", () => ({ ok: true }));
  health.add("cloud-node-controller", () => ({ ok: true }));
  const res = await app.request("/healthz?verbose");
  assert.equal(res.status, 200);
  assert.equal(
    await res.text(),
    "[+]leaderElection ok\n[+]cloud-node-controller ok\nhealthz check passed\n",
  );
});

Deno.test("createServer() /healthz fails with 500 and withholds the reason", async () => {
  const { app, health } = setup();
  health.add("leaderElection", () => ({ ok: false, reason: "lease not renewed for 40s" }));
  health.add("service-lb-controller", () => ({ ok: true }));
  const res = await app.request("/healthz");
  assert.equal(res.status, 500);
  const body = await res.text();
  assert.equal(
    body,
    "[-]leaderElection failed: reason withheld\n[+]service-lb-controller ok\nhealthz check failed\n",
  );
  assert.doesNotMatch(body, /lease not renewed/);
});

Deno.test("createServer() /healthz?exclude= skips a failing check and warns about unknown names", async () => {
  const { app, health } = setup();
  health.add("leaderElection", () => ({ ok: false }));
  health.add("broken", () => {
    throw new Error("boom");
  });
  const res = await app.request(
    "/healthz?exclude=leaderElection&exclude=broken&exclude=nope&verbose",
  );
  assert.equal(res.status, 200);
  assert.equal(
    await res.text(),
    "[+]leaderElection excluded: ok\n[+]broken excluded: ok\n" +
      'warn: some health checks cannot be excluded: no matches for "nope"\nhealthz check passed\n',
  );
  const plain = await app.request("/healthz?exclude=leaderElection");
  assert.equal(plain.status, 500, "a throwing check fails");
});

Deno.test("createServer() /livez runs the same checks as /healthz", async () => {
  const { app, health } = setup();
  assert.equal(await (await app.request("/livez")).text(), "ok");
  health.add("leaderElection", () => ({ ok: false }));
  const res = await app.request("/livez");
  assert.equal(res.status, 500);
  assert.match(await res.text(), /livez check failed\n$/);
});

Deno.test("createServer() /readyz fails until ready() reports caches synced and config loaded", async () => {
  const { app, setReady } = setup();
  setReady(false, ["informer Nodes has not synced"]);
  const res = await app.request("/readyz?verbose");
  assert.equal(res.status, 500);
  assert.equal(
    await res.text(),
    "[+]ping ok\n[-]ready failed: reason withheld\nreadyz check failed\n",
  );
  setReady(true);
  const ok = await app.request("/readyz");
  assert.equal(ok.status, 200);
  assert.equal(await ok.text(), "ok");
  const verbose = await app.request("/readyz?verbose");
  assert.equal(await verbose.text(), "[+]ping ok\n[+]ready ok\nreadyz check passed\n");
});

Deno.test("createServer() /metrics serves the registry in the Prometheus text format", async () => {
  const { app } = setup();
  const res = await app.request("/metrics");
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  assert.match(await res.text(), /^keelson_test_total 3$/m);
});

Deno.test("createServer() /metrics requires the bearer token when one is configured", async () => {
  let token: string | undefined = "s3cret-token";
  const { app } = setup({ metricsToken: () => token });
  const missing = await app.request("/metrics");
  assert.equal(missing.status, 401);
  assert.equal(missing.headers.get("WWW-Authenticate"), 'Bearer realm="keelson"');
  const wrong = await app.request("/metrics", {
    headers: { Authorization: "Bearer s3cret-tokeN" },
  });
  assert.equal(wrong.status, 401);
  const basic = await app.request("/metrics", { headers: { Authorization: "Basic s3cret-token" } });
  assert.equal(basic.status, 401);
  const right = await app.request("/metrics", {
    headers: { Authorization: "Bearer s3cret-token" },
  });
  assert.equal(right.status, 200);
  assert.match(await right.text(), /keelson_test_total 3/);
  assert.equal((await app.request("/healthz")).status, 200, "health endpoints stay open");
  token = undefined;
  assert.equal((await app.request("/metrics")).status, 200, "a removed token applies at once");
});

Deno.test("createServer() answers 404 for paths it does not serve", async () => {
  const { app } = setup();
  assert.equal((await app.request("/healthz/ping")).status, 404);
});
