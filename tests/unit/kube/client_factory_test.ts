import assert from "node:assert/strict";
import { createMetricsRegistry } from "../../../src/metrics/registry.ts";
import { createHttpTransport } from "../../../src/kube/http_transport.ts";
import { kubeClientOver } from "../../../src/kube/kube_client.ts";
import { CLIENT_NAMES, createClientFactory } from "../../../src/kube/client_factory.ts";

/** A server answering every request with its User-Agent. */
function echoUserAgent() {
  return Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) => new Response(request.headers.get("user-agent") ?? ""),
  );
}

Deno.test("createClientFactory() gives each named client its own rate limit over one transport", async () => {
  const server = echoUserAgent();
  const registry = createMetricsRegistry();
  const root = kubeClientOver(
    createHttpTransport(
      { server: `http://127.0.0.1:${server.addr.port}`, source: "test" },
      { registry, now: () => 0 }, // a frozen clock: no token ever comes back
    ),
    "test",
  );
  const clients = createClientFactory(root, { qps: 1, burst: 1 });
  const service = clients.client(CLIENT_NAMES.service);
  const nodes = clients.client(CLIENT_NAMES.cloudNode);
  try {
    assert.equal(clients.client(CLIENT_NAMES.service), service, "one client per name");
    assert.notEqual(nodes, service);
    assert.equal(
      await (await service.transport.fetch("/api")).text(),
      "keelson/service-controller",
    );
    // the service client's only token is spent: its next request waits (and is given up)...
    const waiting = service.transport.fetch("/api", { signal: AbortSignal.timeout(100) });
    await assert.rejects(waiting, (error: unknown) => (error as Error).name === "TimeoutError");
    // ...while the node client still has its own
    assert.equal(
      await (await nodes.transport.fetch("/api")).text(),
      "keelson/cloud-node-controller",
    );
    // one transport underneath: the metrics are shared
    const metric = await registry.getSingleMetric("rest_client_requests_total")!.get();
    const answered = metric.values.filter((v) => v.labels.code === "200")
      .reduce((sum, v) => sum + v.value, 0);
    assert.equal(answered, 2, "both answered requests were counted on the shared metrics");
  } finally {
    root.close();
    await server.shutdown();
  }
});

Deno.test("createClientFactory() clients do not close the shared connections", async () => {
  const server = echoUserAgent();
  const root = kubeClientOver(
    createHttpTransport(
      { server: `http://127.0.0.1:${server.addr.port}`, source: "test" },
      { registry: createMetricsRegistry() },
    ),
    "test",
  );
  const clients = createClientFactory(root, { userAgent: "ccm" });
  try {
    clients.client(CLIENT_NAMES.leaderElection).close();
    const answer = await (await root.transport.fetch("/api")).text();
    assert.equal(answer, "keelson", "the root keeps its own User-Agent and connections");
    const informers = clients.client(CLIENT_NAMES.informers);
    assert.equal(await (await informers.transport.fetch("/api")).text(), "ccm/shared-informers");
  } finally {
    root.close();
    await server.shutdown();
  }
});
