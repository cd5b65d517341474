import assert from "node:assert/strict";
import type { V1Lease } from "@kubernetes/client-node";
import { createLeaseApi } from "../../../src/kube/lease_api.ts";
import { isConflict, KubeApiError } from "../../../src/kube/ports.ts";
import { createRestApi } from "../../../src/kube/rest_api.ts";

/** A transport answering each request with `answer`; records method, path and body. */
function fakeTransport(answer: (method: string, path: string) => Response) {
  const asked: Array<{ method: string; path: string; body: unknown }> = [];
  const transport = {
    fetch(url: string, request: { method?: string; body?: BodyInit | null } = {}) {
      const method = request.method ?? "GET";
      asked.push({
        method,
        path: url,
        body: typeof request.body === "string" ? JSON.parse(request.body) : undefined,
      });
      return Promise.resolve(answer(method, url));
    },
  };
  return { asked, rest: createRestApi(transport) };
}

function status(code: number, reason: string): Response {
  return Response.json({ kind: "Status", status: "Failure", reason, code, message: reason }, {
    status: code,
  });
}

const LEASE: V1Lease = {
  metadata: { namespace: "kube-system", name: "keelson", resourceVersion: "7" },
  spec: { holderIdentity: "a" },
};
const LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/keelson";

Deno.test("createLeaseApi() maps a 404 read to undefined and reads the lease's path", async () => {
  const { asked, rest } = fakeTransport(() => status(404, "NotFound"));
  assert.equal(await createLeaseApi(rest).read("kube-system", "keelson"), undefined);
  assert.deepEqual(asked, [{ method: "GET", path: LEASE_PATH, body: undefined }]);
});

Deno.test("createLeaseApi() turns a 409 replace or create into a KubeApiError conflict", async () => {
  const { rest } = fakeTransport((method) =>
    method === "PUT"
      ? status(409, "Conflict")
      : method === "POST"
      ? status(409, "AlreadyExists")
      : status(500, "InternalError")
  );
  const api = createLeaseApi(rest);
  const replaced = await api.replace(LEASE).catch((error: unknown) => error);
  assert.ok(replaced instanceof KubeApiError && isConflict(replaced));
  assert.equal(replaced.reason, "Conflict");
  const created = await api.create(LEASE).catch((error: unknown) => error);
  assert.ok(isConflict(created));
  const read = await api.read("kube-system", "keelson").catch((error: unknown) => error);
  assert.ok(read instanceof KubeApiError && read.code === 500);
});

Deno.test("createLeaseApi() PUTs the whole lease to its path and POSTs to the collection", async () => {
  const { asked, rest } = fakeTransport((_, path) => Response.json({ ...LEASE, path }));
  const api = createLeaseApi(rest);
  assert.equal((await api.replace(LEASE) as V1Lease & { path: string }).path, LEASE_PATH);
  await api.create(LEASE);
  assert.deepEqual(asked, [
    { method: "PUT", path: LEASE_PATH, body: LEASE },
    {
      method: "POST",
      path: "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
      body: LEASE,
    },
  ]);
  await assert.rejects(
    api.replace({ spec: {} }),
    { name: "TypeError", message: /metadata.namespace and metadata.name must be set/ },
  );
});
