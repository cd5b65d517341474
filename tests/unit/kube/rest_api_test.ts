import assert from "node:assert/strict";
import { KubeApiError } from "../../../src/kube/ports.ts";
import { createRestApi, objectPath, PATCH_CONTENT_TYPES } from "../../../src/kube/rest_api.ts";
import type { TransportRequest } from "../../../src/kube/http_transport.ts";

function recording(answer: (url: string, request: TransportRequest) => Promise<Response>) {
  const asked: Array<{ url: string; request: TransportRequest }> = [];
  const rest = createRestApi({
    fetch(url: string, request: TransportRequest = {}) {
      asked.push({ url, request });
      return answer(url, request);
    },
  });
  return { asked, rest };
}

Deno.test("objectPath() builds core, grouped, namespaced, subresource and collection paths", () => {
  assert.equal(objectPath({ resource: "nodes", name: "n1" }), "/api/v1/nodes/n1");
  assert.equal(
    objectPath({ resource: "services", namespace: "default", name: "web", subresource: "status" }),
    "/api/v1/namespaces/default/services/web/status",
  );
  assert.equal(
    objectPath({ group: "coordination.k8s.io", resource: "leases", namespace: "kube-system" }),
    "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
  );
  assert.equal(objectPath({ resource: "nodes", name: "a/b?c" }), "/api/v1/nodes/a%2Fb%3Fc");
});

Deno.test("RestApi.patch() sends the patch as JSON with the Content-Type of its flavour", async () => {
  const { asked, rest } = recording(() => Promise.resolve(Response.json({ ok: true })));
  for (const type of ["merge", "strategic", "json"] as const) {
    assert.deepEqual(await rest.patch("/api/v1/nodes/n1", { a: 1 }, type, "patch"), { ok: true });
  }
  assert.deepEqual(
    asked.map(({ request }) => [request.method, request.headers?.["content-type"], request.body]),
    [
      ["PATCH", PATCH_CONTENT_TYPES.merge, '{"a":1}'],
      ["PATCH", "application/strategic-merge-patch+json", '{"a":1}'],
      ["PATCH", "application/json-patch+json", '{"a":1}'],
    ],
  );
});

Deno.test("RestApi keeps every field of the server's JSON (no model drops unknown fields)", async () => {
  const node = {
    metadata: { name: "n1", creationTimestamp: "2026-01-02T03:04:05Z" },
    spec: { aFieldFromTheFuture: { x: 1 } },
  };
  const { asked, rest } = recording((_, request) =>
    Promise.resolve(new Response(request.body ?? JSON.stringify(node)))
  );
  const read = await rest.get<typeof node>("/api/v1/nodes/n1", 'read node "n1"');
  assert.deepEqual(read, node, "date-times stay strings, unknown fields stay");
  assert.deepEqual(await rest.replace("/api/v1/nodes/n1", read, 'replace node "n1"'), node);
  assert.equal(asked[1]?.request.method, "PUT");
  assert.equal(asked[1]?.request.headers?.["content-type"], "application/json");
});

Deno.test("RestApi maps a Status answer to a KubeApiError with code, reason and Retry-After", async () => {
  const { rest } = recording(() =>
    Promise.resolve(
      Response.json({ kind: "Status", reason: "TooManyRequests", message: "slow", code: 429 }, {
        status: 429,
        headers: { "retry-after": "4" },
      }),
    )
  );
  await assert.rejects(rest.delete("/api/v1/nodes/n1", 'delete node "n1"'), (error) => {
    assert.ok(error instanceof KubeApiError);
    assert.equal(error.code, 429);
    assert.equal(error.reason, "TooManyRequests");
    assert.equal(error.retryAfterSeconds, 4);
    assert.equal(error.message, 'Cannot delete node "n1": slow (HTTP 429)');
    return true;
  });
});

Deno.test("RestApi maps a network failure to code 0 and passes an abort through", async () => {
  const cause = new Error("Connection refused (os error 111)");
  const { rest } = recording(() =>
    Promise.reject(new TypeError("error sending request", { cause }))
  );
  await assert.rejects(rest.get("/api/v1/nodes/n1", 'read node "n1"'), (error) => {
    assert.ok(error instanceof KubeApiError);
    assert.equal(error.code, 0);
    assert.match(
      error.message,
      /^Cannot read node "n1": error sending request: Connection refused/,
    );
    return true;
  });
  const abort = new DOMException("aborted", "AbortError");
  const aborting = recording(() => Promise.reject(abort));
  await assert.rejects(aborting.rest.get("/api/v1/nodes/n1", "read"), (error) => error === abort);
});

Deno.test("RestApi reports a 2xx answer that is not JSON instead of returning garbage", async () => {
  const { rest } = recording(() => Promise.resolve(new Response("<html>proxy</html>")));
  await assert.rejects(rest.get("/api/v1/nodes/n1", 'read node "n1"'), {
    name: "KubeApiError",
    message: /read node "n1": the API server answered HTTP 200 with a body that is not JSON/,
  });
});
