import assert from "node:assert/strict";
import { createNodePods, MAX_PODS_PER_NODE, trimNodePod } from "../../../src/kube/node_pods.ts";
import { createRestApi } from "../../../src/kube/rest_api.ts";
import type { TransportRequest } from "../../../src/kube/http_transport.ts";

function recording(answer: (url: string, request: TransportRequest) => Response) {
  const asked: Array<{ url: string; request: TransportRequest }> = [];
  const rest = createRestApi({
    fetch(url: string, request: TransportRequest = {}) {
      asked.push({ url, request });
      return Promise.resolve(answer(url, request));
    },
  });
  return { asked, pods: createNodePods({ rest }) };
}

function rawPod(name: string, extra: Record<string, unknown> = {}) {
  return {
    metadata: {
      name,
      namespace: "default",
      uid: `uid-${name}`,
      labels: { big: "x".repeat(1000) },
      ...extra,
    },
    spec: { nodeName: "w-1", containers: [{ name: "app", image: "img" }] },
    status: { phase: "Running" },
  };
}

Deno.test("NodePods.list asks for one Node's Pods by field selector, page by page, and keeps only the fields read", async () => {
  const { asked, pods } = recording((url) => {
    const page = new URL(url, "https://api").searchParams.get("continue");
    const items = page
      ? [rawPod("b", { deletionTimestamp: "2026-12-02T03:00:00Z" })]
      : [rawPod("a"), { kind: "Node", metadata: { name: "w-1" } }, {
        metadata: { name: "no-uid" },
      }];
    return Response.json({
      kind: "PodList",
      apiVersion: "v1",
      metadata: { resourceVersion: "7", ...(page ? {} : { continue: "next" }) },
      items,
    });
  });
  const listed = await pods.list("w-1");
  assert.deepEqual(listed, [
    { namespace: "default", name: "a", uid: "uid-a", nodeName: "w-1" },
    {
      namespace: "default",
      name: "b",
      uid: "uid-b",
      nodeName: "w-1",
      deletionTimestamp: "2026-12-02T03:00:00Z",
    },
  ]);
  assert.equal(asked.length, 2);
  for (const { url, request } of asked) {
    const parsed = new URL(url, "https://api");
    assert.equal(parsed.pathname, "/api/v1/pods");
    assert.equal(parsed.searchParams.get("fieldSelector"), "spec.nodeName=w-1");
    assert.equal(request.method ?? "GET", "GET");
    assert.ok(request.maxBodyBytes! > 0, "each page is read through the bounded reader");
  }
  assert.equal(new URL(asked[1]!.url, "https://api").searchParams.get("continue"), "next");
});

Deno.test("NodePods.list refuses a Node said to hold more Pods than it can", async () => {
  const { pods } = recording(() =>
    Response.json({
      kind: "PodList",
      apiVersion: "v1",
      metadata: {},
      items: Array.from({ length: MAX_PODS_PER_NODE + 1 }, (_, i) => rawPod(`p-${i}`)),
    })
  );
  await assert.rejects(pods.list("w-1"), /more than 5000 items/);
});

Deno.test("NodePods.forceDelete sends grace period 0 and the uid as a precondition", async () => {
  const { asked, pods } = recording(() => Response.json({ kind: "Pod" }));
  await pods.forceDelete({ namespace: "ns", name: "a/b", uid: "u-1", nodeName: "w-1" });
  assert.equal(asked.length, 1);
  const { url, request } = asked[0]!;
  assert.equal(url, "/api/v1/namespaces/ns/pods/a%2Fb");
  assert.equal(request.method, "DELETE");
  assert.equal(new Headers(request.headers).get("content-type"), "application/json");
  assert.deepEqual(JSON.parse(String(request.body)), {
    apiVersion: "v1",
    kind: "DeleteOptions",
    gracePeriodSeconds: 0,
    preconditions: { uid: "u-1" },
  });
});

Deno.test("trimNodePod leaves out a Pod without a name, namespace, uid or node, and over-long strings", () => {
  assert.equal(trimNodePod(null), undefined);
  assert.equal(trimNodePod({ metadata: { name: "a", namespace: "n" }, spec: {} }), undefined);
  assert.equal(
    trimNodePod({ metadata: { name: "a", namespace: "n", uid: "u" }, spec: { nodeName: 7 } }),
    undefined,
  );
  assert.equal(
    trimNodePod({
      metadata: { name: "x".repeat(300), namespace: "n", uid: "u" },
      spec: { nodeName: "w" },
    }),
    undefined,
  );
  // a deletion timestamp that is not a string is as if absent
  assert.deepEqual(
    trimNodePod({
      metadata: { name: "a", namespace: "n", uid: "u", deletionTimestamp: 5 },
      spec: { nodeName: "w" },
    }),
    { namespace: "n", name: "a", uid: "u", nodeName: "w" },
  );
});
