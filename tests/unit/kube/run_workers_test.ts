import assert from "node:assert/strict";
import { done, failed, requeueAfter, type SyncResult } from "../../../src/kube/sync_result.ts";
import { KubeApiError } from "../../../src/kube/ports.ts";
import { itemExponentialRateLimiter } from "../../../src/kube/queue_rate_limiters.ts";
import { runWorkers, WorkQueue } from "../../../src/kube/work_queue.ts";
import { FakeClock } from "../_fakes/fake_clock.ts";
import { turns } from "../../_support/poll.ts";

/** Lets pending promise callbacks and zero-delay tasks run. */
async function settle(): Promise<void> {
  await turns(5);
}

/** A queue on a fake clock, workers running `results[key]` for each key, and a way to stop. */
function harness(results: Record<string, () => Promise<SyncResult>>) {
  const clock = new FakeClock();
  const queue = new WorkQueue({
    name: "test",
    clock,
    rateLimiter: itemExponentialRateLimiter(5, 1000),
  });
  const calls: string[] = [];
  const aborter = new AbortController();
  const running = runWorkers(queue, 2, (key) => {
    calls.push(key);
    const result = results[key];
    assert.ok(result, `a result for ${key}`);
    return result();
  }, aborter.signal);
  return {
    clock,
    queue,
    calls,
    stop: async () => {
      aborter.abort();
      await running;
    },
  };
}

Deno.test("runWorkers() forgets the backoff of a key whose sync is done", async () => {
  const h = harness({ a: () => Promise.resolve(done()) });
  h.queue.addRateLimited("a");
  assert.equal(h.queue.numRequeues("a"), 1);
  h.clock.advance(5);
  await settle();
  assert.deepEqual(h.calls, ["a"]);
  assert.equal(h.queue.numRequeues("a"), 0);
  assert.equal(h.clock.pendingTimers(), 0);
  await h.stop();
});

Deno.test("runWorkers() adds a requeued key again after its delay, without backoff", async () => {
  const h = harness({ a: () => Promise.resolve(requeueAfter(2000)) });
  h.queue.add("a");
  await settle();
  assert.deepEqual(h.calls, ["a"]);
  h.clock.advance(1999);
  await settle();
  assert.equal(h.calls.length, 1);
  h.clock.advance(1);
  await settle();
  assert.deepEqual(h.calls, ["a", "a"]);
  assert.equal(h.queue.numRequeues("a"), 0);
  await h.stop();
});

Deno.test("runWorkers() retries a retriable failure with growing backoff", async () => {
  const h = harness({ a: () => Promise.resolve(failed(new Error("boom"), { retriable: true })) });
  h.queue.add("a");
  await settle();
  assert.equal(h.queue.numRequeues("a"), 1);
  h.clock.advance(4);
  await settle();
  assert.equal(h.calls.length, 1, "not before 5 ms");
  h.clock.advance(1);
  await settle();
  assert.equal(h.calls.length, 2);
  h.clock.advance(9);
  await settle();
  assert.equal(h.calls.length, 2, "not before 10 ms more");
  h.clock.advance(1);
  await settle();
  assert.equal(h.calls.length, 3);
  assert.equal(h.queue.numRequeues("a"), 3);
  await h.stop();
});

Deno.test("runWorkers() honours the Retry-After of a KubeApiError instead of backing off", async () => {
  const error = new KubeApiError("Cannot patch: too many requests", {
    code: 429,
    reason: "TooManyRequests",
    retryAfterSeconds: 3,
  });
  const h = harness({ a: () => Promise.resolve(failed(error, { retriable: true })) });
  h.queue.add("a");
  await settle();
  assert.equal(h.queue.numRequeues("a"), 0);
  h.clock.advance(2999);
  await settle();
  assert.equal(h.calls.length, 1);
  h.clock.advance(1);
  await settle();
  assert.equal(h.calls.length, 2);
  await h.stop();
});

Deno.test("runWorkers() drops a non-retriable failure and forgets its backoff", async () => {
  const h = harness({
    a: () => Promise.resolve(failed(new Error("bad spec"), { retriable: false })),
  });
  h.queue.addRateLimited("a");
  h.clock.advance(5);
  await settle();
  assert.equal(h.calls.length, 1);
  assert.equal(h.queue.numRequeues("a"), 0);
  assert.equal(h.clock.pendingTimers(), 0);
  h.clock.advance(10_000);
  await settle();
  assert.equal(h.calls.length, 1);
  await h.stop();
});

Deno.test("runWorkers() treats a sync that throws as a retriable failure", async () => {
  const h = harness({ a: () => Promise.reject(new TypeError("unexpected")) });
  h.queue.add("a");
  await settle();
  assert.equal(h.queue.numRequeues("a"), 1);
  h.clock.advance(5);
  await settle();
  assert.equal(h.calls.length, 2);
  await h.stop();
});

Deno.test("runWorkers() stops when the signal aborts and lets the current sync finish", async () => {
  let release = (): void => {};
  let finished = false;
  const h = harness({
    a: () =>
      new Promise<SyncResult>((resolve) => {
        release = () => {
          finished = true;
          resolve(done());
        };
      }),
  });
  h.queue.add("a");
  await settle();
  const stopping = h.stop();
  assert.equal(h.queue.shuttingDown, true);
  release();
  await stopping;
  assert.equal(finished, true);
  h.queue.add("b");
  assert.equal(h.queue.len(), 0);
});

Deno.test("runWorkers() returns at once when the signal is already aborted", async () => {
  const queue = new WorkQueue({ name: "test" });
  queue.add("a");
  let calls = 0;
  await runWorkers(queue, 3, () => {
    calls++;
    return Promise.resolve(done());
  }, AbortSignal.abort());
  assert.equal(calls, 0);
});
