import assert from "node:assert/strict";
import type { CoreV1Event } from "@kubernetes/client-node";
import {
  AggregatingEventRecorder,
  type EventSink,
  objectReference,
} from "../../../src/kube/event_recorder.ts";
import { KubeApiError } from "../../../src/kube/ports.ts";
import { FakeClock } from "../_fakes/fake_clock.ts";

type Call =
  | { op: "create"; namespace: string; event: CoreV1Event }
  | { op: "patch"; namespace: string; name: string; patch: unknown };

/** An EventSink that keeps its calls and can be told to fail. */
class MemorySink implements EventSink {
  calls: Call[] = [];
  failWith: unknown = undefined;
  create(namespace: string, event: CoreV1Event): Promise<CoreV1Event> {
    this.calls.push({ op: "create", namespace, event });
    return this.failWith ? Promise.reject(this.failWith) : Promise.resolve(event);
  }
  patch(namespace: string, name: string, patch: unknown): Promise<CoreV1Event> {
    this.calls.push({ op: "patch", namespace, name, patch });
    return this.failWith ? Promise.reject(this.failWith) : Promise.resolve({} as CoreV1Event);
  }
}

const NODE = { kind: "Node", apiVersion: "v1", metadata: { name: "worker-1", uid: "u-1" } };
const SERVICE = {
  kind: "Service",
  apiVersion: "v1",
  metadata: { name: "web", namespace: "shop", uid: "u-2" },
};

function setup(): { sink: MemorySink; clock: FakeClock; recorder: AggregatingEventRecorder } {
  const sink = new MemorySink();
  const clock = new FakeClock(1_700_000_000_000);
  const recorder = new AggregatingEventRecorder(sink, {
    component: "cloud-node-controller",
    host: "cp-1",
    clock,
  });
  return { sink, clock, recorder };
}

Deno.test("AggregatingEventRecorder.event() creates a client-go style Event", async () => {
  const { sink, recorder } = setup();
  recorder.event(SERVICE, "Normal", "EnsuredLoadBalancer", "Ensured load balancer");
  await recorder.flush();
  assert.equal(sink.calls.length, 1);
  const call = sink.calls[0]!;
  assert.equal(call.op, "create");
  assert.ok(call.op === "create");
  assert.equal(call.namespace, "shop");
  // <name>.<unix nanoseconds in hex>: the millisecond, plus a per-recorder random sequence below it
  const suffix = BigInt(`0x${call.event.metadata.name!.replace(/^web\./, "")}`);
  assert.equal(suffix / 1_000_000n, 1_700_000_000_000n);
  assert.deepEqual(call.event.involvedObject, {
    kind: "Service",
    apiVersion: "v1",
    name: "web",
    namespace: "shop",
    uid: "u-2",
  });
  assert.equal(call.event.type, "Normal");
  assert.equal(call.event.reason, "EnsuredLoadBalancer");
  assert.equal(call.event.count, 1);
  assert.deepEqual(call.event.source, { component: "cloud-node-controller", host: "cp-1" });
  assert.equal(call.event.firstTimestamp?.toISOString(), "2023-11-14T22:13:20.000Z");
});

Deno.test("AggregatingEventRecorder.event() puts events of cluster-scoped objects in default", async () => {
  const { sink, recorder } = setup();
  recorder.event(NODE, "Normal", "Synced", "Node synced successfully");
  await recorder.flush();
  assert.equal(sink.calls[0]?.namespace, "default");
});

Deno.test("AggregatingEventRecorder.event() patches count and lastTimestamp of a repeat", async () => {
  const { sink, clock, recorder } = setup();
  recorder.event(NODE, "Normal", "Synced", "Node synced successfully");
  clock.advance(30_000);
  recorder.event(NODE, "Normal", "Synced", "Node synced successfully");
  clock.advance(30_000);
  recorder.event(NODE, "Normal", "Synced", "Node synced successfully");
  await recorder.flush();
  assert.deepEqual(sink.calls.map((c) => c.op), ["create", "patch", "patch"]);
  const created = sink.calls[0]!;
  assert.ok(created.op === "create");
  const last = sink.calls[2]!;
  assert.ok(last.op === "patch");
  assert.equal(last.name, created.event.metadata.name);
  assert.equal(last.namespace, "default");
  assert.deepEqual(last.patch, { count: 3, lastTimestamp: "2023-11-14T22:14:20Z" });
});

Deno.test("AggregatingEventRecorder.event() creates a new Event for another message or reason", async () => {
  const { sink, recorder } = setup();
  recorder.event(NODE, "Warning", "SyncFailed", "Cannot sync: timeout");
  recorder.event(NODE, "Warning", "SyncFailed", "Cannot sync: refused");
  recorder.event(NODE, "Normal", "SyncFailed", "Cannot sync: refused");
  await recorder.flush();
  assert.deepEqual(sink.calls.map((c) => c.op), ["create", "create", "create"]);
  const names = sink.calls.map((c) => c.op === "create" ? c.event.metadata.name : "");
  assert.equal(new Set(names).size, 3, "names are unique within one millisecond");
});

Deno.test("AggregatingEventRecorder.event() creates again after the 10 minute window", async () => {
  const { sink, clock, recorder } = setup();
  recorder.event(NODE, "Normal", "Synced", "Node synced successfully");
  clock.advance(10 * 60 * 1000 + 1);
  recorder.event(NODE, "Normal", "Synced", "Node synced successfully");
  await recorder.flush();
  assert.deepEqual(sink.calls.map((c) => c.op), ["create", "create"]);
});

Deno.test("AggregatingEventRecorder.event() does not throw when the sink fails", async () => {
  const { sink, recorder } = setup();
  sink.failWith = new KubeApiError("Cannot create event: forbidden", { code: 403 });
  recorder.event(NODE, "Normal", "Synced", "Node synced successfully");
  await recorder.flush();
  sink.failWith = undefined;
  // the failed create is forgotten, so the repeat creates instead of patching nothing
  recorder.event(NODE, "Normal", "Synced", "Node synced successfully");
  await recorder.flush();
  assert.deepEqual(sink.calls.map((c) => c.op), ["create", "create"]);
});

Deno.test("AggregatingEventRecorder.event() creates a new Event when the patched one is gone", async () => {
  const { sink, recorder } = setup();
  recorder.event(NODE, "Normal", "Synced", "Node synced successfully");
  await recorder.flush();
  sink.failWith = new KubeApiError("Cannot patch event: not found", { code: 404 });
  recorder.event(NODE, "Normal", "Synced", "Node synced successfully");
  await recorder.flush();
  assert.deepEqual(sink.calls.map((c) => c.op), ["create", "patch", "create"]);
  const recreated = sink.calls[2]!;
  assert.ok(recreated.op === "create");
  assert.equal(recreated.event.count, 2);
});

Deno.test("AggregatingEventRecorder.event() writes in order and drops past the queue bound", async () => {
  const sink = new MemorySink();
  const recorder = new AggregatingEventRecorder(sink, { component: "c", maxPending: 3 });
  for (let i = 0; i < 6; i++) recorder.event(NODE, "Normal", "Step", `step ${i}`);
  await recorder.flush();
  const messages = sink.calls.map((c) => c.op === "create" ? c.event.message : "");
  // the first write starts at once, so three more fit in the queue behind it
  assert.deepEqual(messages, ["step 0", "step 1", "step 2", "step 3"]);
});

Deno.test("objectReference() accepts a flat ObjectReference and an object with metadata", () => {
  assert.deepEqual(objectReference({ kind: "Node", name: "n1", uid: "u" }), {
    kind: "Node",
    name: "n1",
    uid: "u",
  });
  assert.deepEqual(objectReference(NODE), {
    kind: "Node",
    apiVersion: "v1",
    name: "worker-1",
    uid: "u-1",
  });
});

Deno.test("AggregatingEventRecorder.close() drops writes still pending after the grace period", async () => {
  const release = Promise.withResolvers<void>();
  const sink = new MemorySink();
  sink.create = (namespace, event) => {
    sink.calls.push({ op: "create", namespace, event });
    return release.promise.then(() => event);
  };
  const recorder = new AggregatingEventRecorder(sink, { component: "c", host: "h" });
  for (let i = 0; i < 3; i++) recorder.event(SERVICE, "Normal", `Reason${i}`, "m");
  const began = performance.now();
  assert.equal(await recorder.close(50), 3, "one in progress and two queued");
  assert.ok(performance.now() - began < 2_000);
  recorder.event(SERVICE, "Normal", "AfterClose", "m");
  release.resolve();
  await recorder.flush();
  assert.equal(sink.calls.length, 1, "queued writes were dropped, later events ignored");
});

Deno.test("AggregatingEventRecorder.close() returns 0 when everything was written", async () => {
  const { sink, recorder } = setup();
  recorder.event(NODE, "Normal", "Synced", "m");
  assert.equal(await recorder.close(1_000), 0);
  assert.equal(sink.calls.length, 1);
});

Deno.test("AggregatingEventRecorder: recorders writing in the same millisecond name their Events apart", () => {
  // every control-plane host records Events; equal names would make all but one fail with 409
  const names = new Set<string>();
  for (let i = 0; i < 20; i++) {
    const sink = new MemorySink();
    const recorder = new AggregatingEventRecorder(sink, {
      component: "keelson",
      host: `cp-${i}`,
      clock: new FakeClock(1_700_000_000_000),
    });
    recorder.event(SERVICE, "Normal", "AnnouncedByBGP", `Host cp-${i} announces 192.0.2.1`);
    const call = sink.calls[0];
    assert.ok(call?.op === "create");
    names.add(call.event.metadata.name!);
  }
  assert.equal(names.size, 20);
});

Deno.test("AggregatingEventRecorder.event() writes 25 Events per object, then one per 5 minutes", async () => {
  const { sink, clock, recorder } = setup();
  // a Service whose hosts change for every Node of a burst: one Event per change
  for (let i = 0; i < 100; i++) {
    recorder.event(
      SERVICE,
      "Normal",
      "UpdatedLoadBalancer",
      "Updated load balancer with new hosts",
    );
  }
  await recorder.flush();
  assert.deepEqual(sink.calls.map((c) => c.op), ["create", ...Array(24).fill("patch")]);
  // another object has its own bucket
  recorder.event(NODE, "Normal", "Synced", "Node synced successfully");
  await recorder.flush();
  assert.equal(sink.calls.length, 26);
  // a token comes back after 5 minutes; the skipped repeats are in the count
  clock.advance(300_000);
  recorder.event(SERVICE, "Normal", "UpdatedLoadBalancer", "Updated load balancer with new hosts");
  recorder.event(SERVICE, "Normal", "UpdatedLoadBalancer", "Updated load balancer with new hosts");
  await recorder.flush();
  assert.equal(sink.calls.length, 27);
  const last = sink.calls[26]!;
  assert.ok(last.op === "patch");
  assert.equal((last.patch as { count: number }).count, 101);
});

Deno.test("AggregatingEventRecorder.event() creates an Event the spam filter skipped at its next turn", async () => {
  const { sink, clock, recorder } = setup();
  for (let i = 0; i < 25; i++) recorder.event(SERVICE, "Normal", "Step", `step ${i}`);
  recorder.event(SERVICE, "Warning", "Failed", "it failed");
  await recorder.flush();
  assert.equal(sink.calls.length, 25, "the 26th Event about the object is skipped");
  clock.advance(300_000);
  recorder.event(SERVICE, "Warning", "Failed", "it failed");
  await recorder.flush();
  const created = sink.calls[25]!;
  assert.ok(created.op === "create", "never written, so created rather than patched");
  assert.equal(created.event.reason, "Failed");
  assert.equal(created.event.count, 2);
});
