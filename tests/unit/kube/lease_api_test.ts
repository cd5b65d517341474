import assert from "node:assert/strict";
import { ApiException, type V1Lease } from "@kubernetes/client-node";
import { leaseApiFromCoordinationApi, type LeaseCalls } from "../../../src/kube/lease_api.ts";
import { isConflict, KubeApiError } from "../../../src/kube/ports.ts";

function status(code: number, reason: string): ApiException<string> {
  const body = JSON.stringify({ kind: "Status", status: "Failure", reason, code, message: reason });
  return new ApiException(code, `HTTP-Code: ${code}`, body, {});
}

const LEASE: V1Lease = {
  metadata: { namespace: "kube-system", name: "keelson", resourceVersion: "7" },
  spec: { holderIdentity: "a" },
};

Deno.test("leaseApiFromCoordinationApi() maps a 404 read to undefined and passes the lease name", async () => {
  const asked: unknown[] = [];
  const calls = {
    readNamespacedLease(params: unknown) {
      asked.push(params);
      return Promise.reject(status(404, "NotFound"));
    },
  } as unknown as LeaseCalls;
  const api = leaseApiFromCoordinationApi(calls);
  assert.equal(await api.read("kube-system", "keelson"), undefined);
  assert.deepEqual(asked, [{ namespace: "kube-system", name: "keelson" }]);
});

Deno.test("leaseApiFromCoordinationApi() turns a 409 replace into a KubeApiError conflict", async () => {
  const calls = {
    replaceNamespacedLease: () => Promise.reject(status(409, "Conflict")),
    createNamespacedLease: () => Promise.reject(status(409, "AlreadyExists")),
    readNamespacedLease: () => Promise.reject(status(500, "InternalError")),
  } as unknown as LeaseCalls;
  const api = leaseApiFromCoordinationApi(calls);
  const replaced = await api.replace(LEASE).catch((error) => error);
  assert.ok(replaced instanceof KubeApiError && isConflict(replaced));
  assert.equal(replaced.reason, "Conflict");
  const created = await api.create(LEASE).catch((error) => error);
  assert.ok(isConflict(created));
  const read = await api.read("kube-system", "keelson").catch((error) => error);
  assert.ok(read instanceof KubeApiError && read.code === 500);
});

Deno.test("leaseApiFromCoordinationApi() replaces with namespace, name and body", async () => {
  const asked: unknown[] = [];
  const calls = {
    replaceNamespacedLease(params: unknown) {
      asked.push(params);
      return Promise.resolve(LEASE);
    },
  } as unknown as LeaseCalls;
  assert.equal(await leaseApiFromCoordinationApi(calls).replace(LEASE), LEASE);
  assert.deepEqual(asked, [{ namespace: "kube-system", name: "keelson", body: LEASE }]);
  await assert.rejects(
    leaseApiFromCoordinationApi(calls).replace({ spec: {} }),
    { name: "TypeError", message: /metadata.namespace and metadata.name must be set/ },
  );
});
