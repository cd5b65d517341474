import assert from "node:assert/strict";
import { listEveryPage, type PagedList, pageThrough } from "../../../src/kube/list_pages.ts";
import { KubeApiError } from "../../../src/kube/ports.ts";
import { RESPONSE_TOO_LARGE } from "../../../src/kube/bounded_body.ts";

type Page = PagedList & { ignored: number; resourceVersion: string };

/** A lister answering from a script of pages or errors, recording each call's options. */
function scripted(script: Array<Page | Error>) {
  const calls: Array<{ limit: number; continueToken?: string }> = [];
  return {
    calls,
    listPage(_path: string, options: { limit: number; continueToken?: string }) {
      calls.push({
        limit: options.limit,
        ...(options.continueToken ? { continueToken: options.continueToken } : {}),
      });
      const next = script.shift();
      if (next === undefined) throw new Error("no more pages scripted");
      return next instanceof Error ? Promise.reject(next) : Promise.resolve(next);
    },
  };
}

Deno.test("listEveryPage: every page's items, the last page, the requests, and the items left out", async () => {
  const lister = scripted([
    { items: [1, 2], continueToken: "a", ignored: 1, resourceVersion: "" },
    { items: [3], continueToken: undefined, ignored: 2, resourceVersion: "42" },
  ]);
  const listed = await listEveryPage(lister, "/api/v1/nodes", { pageSize: 2 });
  assert.deepEqual(listed.items, [1, 2, 3]);
  assert.equal(listed.last.resourceVersion, "42");
  assert.equal(listed.requests, 2);
  assert.equal(listed.ignored, 3);
  assert.deepEqual(lister.calls, [{ limit: 2 }, { limit: 2, continueToken: "a" }]);
});

Deno.test("listEveryPage: a list restarted after an expired token counts only the restarted list's left-out items", async () => {
  const lister = scripted([
    { items: [1], continueToken: "a", ignored: 5, resourceVersion: "" },
    new KubeApiError("Expired", { code: 410 }),
    { items: [1, 2], continueToken: undefined, ignored: 1, resourceVersion: "43" },
  ]);
  const listed = await listEveryPage(lister, "/api/v1/nodes", { pageSize: 500 });
  assert.deepEqual(listed.items, [1, 2]);
  assert.equal(listed.ignored, 1);
  assert.equal(listed.requests, 3);
});

Deno.test("pageThrough: a page past its cap is asked for again with a tenth of the items", async () => {
  const sizes: number[] = [];
  const { items } = await pageThrough(
    (_token, limit) => {
      sizes.push(limit);
      if (limit > 5) {
        return Promise.reject(
          new KubeApiError("too large", { code: 0, reason: RESPONSE_TOO_LARGE }),
        );
      }
      return Promise.resolve({ items: [limit], continueToken: undefined });
    },
    "list /api/v1/pods",
    { pageSize: 500 },
  );
  assert.deepEqual(sizes, [500, 50, 5]);
  assert.deepEqual(items, [5]);
});

Deno.test("listEveryPage: more items than maxItems is an error naming the list, not a truncated list", async () => {
  const lister = scripted([
    { items: [1, 2, 3], continueToken: undefined, ignored: 0, resourceVersion: "" },
  ]);
  await assert.rejects(
    () => listEveryPage(lister, "/api/v1/nodes", { pageSize: 500, maxItems: 2 }),
    /Cannot list \/api\/v1\/nodes: it holds more than 2 items/,
  );
});
