import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { itemExponentialRateLimiter } from "../../../src/kube/queue_rate_limiters.ts";
import { WorkQueue } from "../../../src/kube/work_queue.ts";
import { FakeClock } from "../_fakes/fake_clock.ts";
import { turns } from "../../_support/poll.ts";

function newQueue(clock = new FakeClock(), registry?: Registry): WorkQueue {
  return new WorkQueue({
    name: "test",
    clock,
    rateLimiter: itemExponentialRateLimiter(5, 40),
    ...(registry ? { registry } : {}),
  });
}

Deno.test("WorkQueue.add() keeps one entry per key until it is taken", async () => {
  const queue = newQueue();
  queue.add("a");
  queue.add("b");
  queue.add("a");
  assert.equal(queue.len(), 2);
  assert.equal(await queue.get(), "a");
  assert.equal(await queue.get(), "b");
  assert.equal(queue.len(), 0);
  queue.shutDown();
});

Deno.test("WorkQueue.done() re-queues a key that was added while it was processed", async () => {
  const queue = newQueue();
  queue.add("a");
  assert.equal(await queue.get(), "a");
  queue.add("a");
  queue.add("a");
  assert.equal(queue.len(), 0, "a key being processed is not handed out again");
  queue.done("a");
  assert.equal(queue.len(), 1);
  assert.equal(await queue.get(), "a");
  queue.done("a");
  assert.equal(queue.len(), 0, "a clean key is not re-queued");
  queue.shutDown();
});

Deno.test("WorkQueue.get() never hands one key to two overlapping workers", async () => {
  const queue = newQueue();
  const active = new Set<string>();
  let overlaps = 0;
  let processed = 0;
  async function worker(): Promise<void> {
    for (;;) {
      const key = await queue.get();
      if (key === undefined) return;
      if (active.has(key)) overlaps++;
      active.add(key);
      // re-add the key mid-processing, from "an informer", while other workers wait
      queue.add(key);
      await turns(); // the others run meanwhile
      active.delete(key);
      processed++;
      queue.done(key);
      if (processed >= 20) queue.shutDown();
    }
  }
  queue.add("a");
  queue.add("b");
  await Promise.all([worker(), worker(), worker(), worker()]);
  assert.equal(overlaps, 0);
  assert.ok(processed >= 20);
});

Deno.test("WorkQueue.get() waits for an add, and a waiter whose signal aborts gets undefined", async () => {
  const queue = newQueue();
  const aborter = new AbortController();
  const first = queue.get(aborter.signal);
  const second = queue.get();
  aborter.abort();
  assert.equal(await first, undefined);
  queue.add("a");
  assert.equal(await second, "a", "the key goes to the waiter still waiting");
  queue.shutDown();
});

Deno.test("WorkQueue.addAfter() adds keys in time order and keeps the earlier time of a key", async () => {
  const clock = new FakeClock();
  const queue = newQueue(clock);
  queue.addAfter("a", 30);
  queue.addAfter("b", 10);
  queue.addAfter("c", 20);
  queue.addAfter("b", 50); // later than the pending 10 ms: ignored
  queue.addAfter("c", 5); // earlier than the pending 20 ms: wins
  clock.advance(4);
  assert.equal(queue.len(), 0);
  clock.advance(1);
  assert.equal(queue.len(), 1);
  clock.advance(100);
  assert.equal(queue.len(), 3);
  assert.deepEqual([await queue.get(), await queue.get(), await queue.get()], ["c", "b", "a"]);
  assert.equal(clock.pendingTimers(), 0);
  queue.shutDown();
});

Deno.test("WorkQueue.addRateLimited() backs off 5, 10, 20 ms, caps, and forget() resets", async () => {
  const clock = new FakeClock();
  const queue = newQueue(clock);
  async function readyAfter(): Promise<number> {
    queue.addRateLimited("a");
    let waited = 0;
    // bounded, so a regression fails instead of spinning
    while (queue.len() === 0 && waited < 1000) {
      clock.advance(1);
      waited++;
    }
    // take it out again so the next round starts from an empty queue
    assert.equal(await queue.get(), "a");
    queue.done("a");
    return waited;
  }
  const waits: number[] = [];
  for (let i = 0; i < 5; i++) waits.push(await readyAfter());
  assert.deepEqual(waits, [5, 10, 20, 40, 40]);
  assert.equal(queue.numRequeues("a"), 5);
  queue.forget("a");
  assert.equal(queue.numRequeues("a"), 0);
  assert.equal(await readyAfter(), 5);
  queue.shutDown();
});

Deno.test("WorkQueue.shutDown() wakes waiters, cancels delays and ignores later adds", async () => {
  const clock = new FakeClock();
  const queue = newQueue(clock);
  const waiting = queue.get();
  queue.addAfter("later", 1000);
  queue.shutDown();
  assert.equal(await waiting, undefined);
  assert.equal(clock.pendingTimers(), 0);
  queue.add("a");
  queue.addRateLimited("b");
  assert.equal(queue.len(), 0);
  assert.equal(await queue.get(), undefined);
  assert.equal(queue.shuttingDown, true);
});

async function metricValue(registry: Registry, name: string, suffix = ""): Promise<number> {
  const metric = registry.getSingleMetric(name);
  assert.ok(metric, `metric ${name} is registered`);
  const { values } = await metric.get();
  const wanted = `${name}${suffix}`;
  // histograms report _sum/_count/_bucket samples under metricName; gauges and counters do not
  const sample = values.find((v) =>
    v.labels.name === "test" && ((v as { metricName?: string }).metricName ?? name) === wanted
  );
  assert.ok(sample, `sample ${name}${suffix} exists`);
  return sample.value;
}

Deno.test("WorkQueue metrics count adds, depth, retries and durations with label name", async () => {
  const clock = new FakeClock();
  const registry = new Registry();
  const queue = newQueue(clock, registry);
  queue.add("a");
  queue.add("b");
  queue.add("a");
  assert.equal(await metricValue(registry, "workqueue_adds_total"), 2);
  assert.equal(await metricValue(registry, "workqueue_depth"), 2);
  clock.advance(100);
  assert.equal(await queue.get(), "a");
  assert.equal(await metricValue(registry, "workqueue_depth"), 1);
  assert.equal(await metricValue(registry, "workqueue_queue_duration_seconds", "_count"), 1);
  assert.equal(await metricValue(registry, "workqueue_queue_duration_seconds", "_sum"), 0.1);
  clock.advance(250);
  assert.equal(await metricValue(registry, "workqueue_unfinished_work_seconds"), 0.25);
  assert.equal(await metricValue(registry, "workqueue_longest_running_processor_seconds"), 0.25);
  queue.done("a");
  assert.equal(await metricValue(registry, "workqueue_work_duration_seconds", "_sum"), 0.25);
  assert.equal(await metricValue(registry, "workqueue_unfinished_work_seconds"), 0);
  queue.addRateLimited("a");
  queue.addAfter("c", 10);
  assert.equal(await metricValue(registry, "workqueue_retries_total"), 2);
  const text = await registry.metrics();
  assert.match(text, /^workqueue_adds_total\{name="test"\} 2$/m);
  queue.shutDown();
});

Deno.test("WorkQueue metrics of two queues share one registry", async () => {
  const registry = new Registry();
  const one = new WorkQueue({ name: "Nodes", registry });
  const two = new WorkQueue({ name: "service", registry });
  one.add("n1");
  two.add("default/web");
  two.add("default/db");
  const text = await registry.metrics();
  assert.match(text, /^workqueue_depth\{name="Nodes"\} 1$/m);
  assert.match(text, /^workqueue_depth\{name="service"\} 2$/m);
  one.shutDown();
  two.shutDown();
});
