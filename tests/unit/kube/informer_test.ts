import assert from "node:assert/strict";
import type { V1Node } from "@kubernetes/client-node";
import { createInformer } from "../../../src/kube/informer.ts";
import type { ListResult, WatchOptions } from "../../../src/kube/kube_client.ts";
import { type InformerEvent, KubeApiError } from "../../../src/kube/ports.ts";
import type { RawWatchEvent } from "../../../src/kube/watch_lines.ts";
import { pollUntil } from "../../_support/poll.ts";
import { createMetricsRegistry } from "../../../src/metrics/registry.ts";

const node = (name: string, rv: string) => ({
  metadata: { name, resourceVersion: rv, creationTimestamp: "2026-01-02T03:04:05Z" },
  status: { capacity: { cpu: "4", memory: "8Gi" } },
});

/** A scripted client: each list/watch call takes the next entry; an Error entry is thrown. */
function fakeClient(
  lists: Array<(Omit<ListResult, "ignored"> & { ignored?: number }) | Error>,
  watches: Array<Array<RawWatchEvent | Error>>,
) {
  const calls: string[] = [];
  return {
    calls,
    list(path: string): Promise<ListResult> {
      calls.push(`list ${path}`);
      const next = lists.shift();
      if (!next) return new Promise(() => {});
      return next instanceof Error
        ? Promise.reject(next)
        : Promise.resolve({ ignored: 0, ...next });
    },
    async *watch(path: string, options?: WatchOptions): AsyncGenerator<RawWatchEvent> {
      calls.push(
        `watch ${path} rv=${options?.resourceVersion} bookmarks=${options?.allowWatchBookmarks}`,
      );
      const script = watches.shift();
      if (!script) {
        // no more script: block until aborted, like a quiet watch
        await new Promise((resolve) => options?.signal?.addEventListener("abort", resolve));
        return;
      }
      for (const item of script) {
        if (item instanceof Error) throw item;
        yield item;
      }
    },
  };
}

Deno.test("createInformer() lists, then watches from the list's resourceVersion with bookmarks, and applies add/update/delete", async () => {
  const client = fakeClient([{ items: [node("a", "1")], resourceVersion: "10" }], [[
    { type: "ADDED", object: node("b", "11") },
    { type: "MODIFIED", object: node("a", "12") },
    { type: "BOOKMARK", object: { metadata: { resourceVersion: "13" } } },
    { type: "DELETED", object: node("b", "14") },
  ]]);
  const informer = createInformer<V1Node>(client, { path: "/api/v1/nodes", kind: "Node" });
  const events: InformerEvent<V1Node>[] = [];
  informer.subscribe((e) => events.push(e));
  const controller = new AbortController();
  const done = informer.run(controller.signal);
  assert.equal(await informer.waitForSync(AbortSignal.timeout(1000)), true);
  await pollUntil("four events", () => events.length === 4, {
    timeoutMs: 5_000,
    intervalMs: 1,
  });
  controller.abort();
  await done;
  assert.deepEqual(events.map((e) => `${e.type} ${e.object.metadata?.name}`), [
    "add a",
    "add b",
    "update a",
    "delete b",
  ]);
  assert.equal(events[2]!.old?.metadata?.resourceVersion, "1");
  assert.deepEqual(informer.list().map((n) => n.metadata?.name), ["a"]);
  assert.equal(
    informer.get("a")?.metadata?.creationTimestamp,
    "2026-01-02T03:04:05Z",
    "objects are the server's JSON",
  );
  assert.equal(client.calls[1], "watch /api/v1/nodes rv=10 bookmarks=true");
});

Deno.test("createInformer() re-lists after 410 Expired and deletes objects gone meanwhile", async () => {
  const gone = new KubeApiError("expired", { code: 410, reason: "Expired" });
  const client = fakeClient([
    { items: [node("a", "1"), node("b", "2")], resourceVersion: "5" },
    { items: [node("a", "1")], resourceVersion: "9" },
  ], [[gone]]);
  const informer = createInformer<V1Node>(client, { path: "/api/v1/nodes", kind: "Node" });
  const events: string[] = [];
  informer.subscribe((e) => events.push(`${e.type} ${e.object.metadata?.name}`));
  const controller = new AbortController();
  const done = informer.run(controller.signal);
  await pollUntil("the delete of b", () => events.includes("delete b"), {
    timeoutMs: 5_000,
    intervalMs: 1,
  });
  controller.abort();
  await done;
  assert.deepEqual(client.calls.slice(0, 4), [
    "list /api/v1/nodes",
    "watch /api/v1/nodes rv=5 bookmarks=true",
    "list /api/v1/nodes",
    "watch /api/v1/nodes rv=9 bookmarks=true",
  ]);
});

Deno.test("createInformer() retries HTTP failures with backoff doubling from 1 s to 30 s and never stops by itself", async () => {
  const down = new KubeApiError("unavailable", { code: 503 });
  const client = fakeClient(
    [down, down, down, down, down, down, down, { items: [], resourceVersion: "1" }],
    [],
  );
  const slept: number[] = [];
  const informer = createInformer<V1Node>(client, {
    path: "/api/v1/nodes",
    kind: "Node",
    random: () => 0.5, // no jitter
    sleep: (ms) => {
      slept.push(ms);
      return Promise.resolve();
    },
  });
  const controller = new AbortController();
  const done = informer.run(controller.signal);
  assert.equal(await informer.waitForSync(AbortSignal.timeout(1000)), true);
  controller.abort();
  await done;
  assert.deepEqual(slept, [1000, 2000, 4000, 8000, 16000, 30000, 30000]);
});

Deno.test("createInformer() keeps going when a handler throws", async () => {
  const client = fakeClient(
    [{ items: [node("a", "1"), node("b", "2")], resourceVersion: "5" }],
    [],
  );
  const informer = createInformer<V1Node>(client, { path: "/api/v1/nodes", kind: "Node" });
  const seen: string[] = [];
  informer.subscribe(() => {
    throw new Error("handler bug");
  });
  informer.subscribe((e) => seen.push(e.object.metadata?.name ?? ""));
  const controller = new AbortController();
  const done = informer.run(controller.signal);
  await informer.waitForSync(AbortSignal.timeout(1000));
  controller.abort();
  await done;
  assert.deepEqual(seen, ["a", "b"]);
  assert.equal(informer.list().length, 2);
});

Deno.test("createInformer() resync delivers every cached object as an update with old === object", async () => {
  const client = fakeClient([{ items: [node("a", "1")], resourceVersion: "5" }], []);
  let resyncs = 0;
  const informer = createInformer<V1Node>(client, {
    path: "/api/v1/nodes",
    kind: "Node",
    resyncMs: 60_000,
    sleep: (ms, signal): Promise<void> => {
      if (ms !== 60_000) return Promise.resolve();
      resyncs++;
      // let the first resync through once the list is cached, then wait for the abort
      return resyncs === 1
        ? pollUntil("a cached", () => informer.get("a") !== undefined, { intervalMs: 1 })
          .then(() => {})
        : new Promise((_, reject) =>
          signal?.addEventListener("abort", () => reject(signal.reason))
        );
    },
  });
  const events: InformerEvent<V1Node>[] = [];
  informer.subscribe((e) => events.push(e));
  const controller = new AbortController();
  const done = informer.run(controller.signal);
  await pollUntil("two events", () => events.length === 2, {
    timeoutMs: 5_000,
    intervalMs: 1,
  });
  controller.abort();
  await done;
  assert.equal(events[1]!.type, "update");
  assert.equal(events[1]!.old, events[1]!.object);
});

Deno.test("createInformer() waitForSync() resolves false when the signal aborts first", async () => {
  const informer = createInformer<V1Node>(fakeClient([], []), {
    path: "/api/v1/nodes",
    kind: "Node",
  });
  assert.equal(await informer.waitForSync(AbortSignal.abort()), false);
  assert.equal(informer.hasSynced(), false);
});

Deno.test("createInformer() retries about every second while the server does not answer at all", async () => {
  const refused = new KubeApiError("refused", { code: 0 });
  const client = fakeClient([refused, refused, refused, { items: [], resourceVersion: "1" }], []);
  const slept: number[] = [];
  const informer = createInformer<V1Node>(client, {
    path: "/api/v1/nodes",
    kind: "Node",
    random: () => 0.5,
    sleep: (ms) => {
      slept.push(ms);
      return Promise.resolve();
    },
  });
  const controller = new AbortController();
  const done = informer.run(controller.signal);
  assert.equal(await informer.waitForSync(AbortSignal.timeout(1000)), true);
  controller.abort();
  await done;
  assert.deepEqual(slept, [1000, 1000, 1000]);
});

Deno.test("createInformer() waits at least the Retry-After the server asked for", async () => {
  const busy = new KubeApiError("busy", { code: 429, retryAfterSeconds: 5 });
  const client = fakeClient([busy, { items: [], resourceVersion: "1" }], []);
  const slept: number[] = [];
  const informer = createInformer<V1Node>(client, {
    path: "/api/v1/nodes",
    kind: "Node",
    random: () => 0.5,
    sleep: (ms) => {
      slept.push(ms);
      return Promise.resolve();
    },
  });
  const controller = new AbortController();
  const done = informer.run(controller.signal);
  await informer.waitForSync(AbortSignal.timeout(1000));
  controller.abort();
  await done;
  assert.deepEqual(slept, [5000]);
});

Deno.test("createInformer() leaves out and counts watched objects of another kind or apiVersion", async () => {
  const client = fakeClient([{ items: [node("a", "1")], resourceVersion: "10", ignored: 2 }], [[
    { type: "ADDED", object: { kind: "Service", apiVersion: "v1", ...node("svc", "11") } },
    { type: "ADDED", object: { kind: "Node", apiVersion: "other.io/v1", ...node("x", "12") } },
    { type: "ADDED", object: { kind: "Node", apiVersion: "v1", ...node("b", "13") } },
  ]]);
  const registry = createMetricsRegistry();
  const informer = createInformer<V1Node>(client, {
    path: "/api/v1/nodes",
    kind: "Node",
    registry,
  });
  const controller = new AbortController();
  const done = informer.run(controller.signal);
  await pollUntil("b in the cache", () => informer.get("b") !== undefined, {
    timeoutMs: 5_000,
    intervalMs: 1,
  });
  controller.abort();
  await done;
  assert.deepEqual(informer.list().map((n) => n.metadata?.name).sort(), ["a", "b"]);
  const ignored = (await registry.getSingleMetric("keelson_informer_ignored_objects_total")!.get())
    .values;
  // two left out of the list by the client, two watch events here
  assert.deepEqual(ignored.map((v) => [v.labels.resource, v.value]), [["/api/v1/nodes", 4]]);
});
