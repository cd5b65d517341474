import assert from "node:assert/strict";
import { KubeApiError } from "../../../src/kube/ports.ts";
import { readOnlyClientOver } from "../../../src/kube/read_only_client.ts";
import type { TransportRequest } from "../../../src/kube/http_transport.ts";

/** A transport answering every request with `answer`, recording what was asked. */
function fakeTransport(answer: () => Response) {
  const requests: { url: string; request: TransportRequest | undefined }[] = [];
  return {
    requests,
    fetch(url: string, request?: TransportRequest): Promise<Response> {
      requests.push({ url, request });
      return Promise.resolve(answer());
    },
    close() {},
  };
}

const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

Deno.test("the read-only client has no method that writes", () => {
  const client = readOnlyClientOver(fakeTransport(() => json({})), "fake");
  assert.deepEqual(Object.keys(client).sort(), ["close", "listPage", "source"]);
});

Deno.test("listPage sends a GET with limit and continue, and returns the page and its token", async () => {
  const transport = fakeTransport(() =>
    json({ metadata: { continue: "next-1" }, items: [{ metadata: { name: "a" } }] })
  );
  const client = readOnlyClientOver(transport, "fake");
  const page = await client.listPage("/api/v1/nodes", { limit: 2, continueToken: "tok/+" });
  assert.deepEqual(page, {
    items: [{ metadata: { name: "a" } }],
    continueToken: "next-1",
    resourceVersion: "",
    ignored: 0,
  });
  assert.equal(transport.requests.length, 1);
  const { url, request } = transport.requests[0]!;
  assert.equal(url, "/api/v1/nodes?limit=2&continue=tok%2F%2B");
  // no method: fetch's default, GET; no body
  assert.equal(request?.method, undefined);
  assert.equal(request?.body, undefined);
});

Deno.test("listPage: the last page has no token; an API error keeps its code and message", async () => {
  const last = readOnlyClientOver(fakeTransport(() => json({ metadata: {}, items: [] })), "f");
  assert.deepEqual(await last.listPage("/api/v1/nodes", { limit: 1 }), {
    items: [],
    continueToken: undefined,
    resourceVersion: "",
    ignored: 0,
  });
  const forbidden = readOnlyClientOver(
    fakeTransport(() =>
      json({
        kind: "Status",
        reason: "Forbidden",
        message: 'nodes is forbidden: User "x" cannot list resource "nodes"',
      }, 403)
    ),
    "f",
  );
  await assert.rejects(
    forbidden.listPage("/api/v1/nodes", { limit: 1 }),
    (error: unknown) =>
      error instanceof KubeApiError && error.code === 403 &&
      /Cannot list \/api\/v1\/nodes: nodes is forbidden/.test(error.message),
  );
});

Deno.test("listPage refuses an answer whose items is not a list", async () => {
  const client = readOnlyClientOver(fakeTransport(() => json({ items: { a: 1 } })), "f");
  await assert.rejects(client.listPage("/api/v1/nodes", { limit: 1 }), /items is not a list/);
});
