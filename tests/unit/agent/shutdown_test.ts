import assert from "node:assert/strict";
import { STOP_STEPS, StopSequence } from "../../../src/agent/shutdown.ts";
import { holdsFor } from "../../_support/poll.ts";

/** A part that stops `delayMs` after its signal aborts, recording the order. */
function part(signal: AbortSignal, name: string, order: string[], delayMs = 0): Promise<void> {
  return new Promise((resolve) => {
    signal.addEventListener("abort", () => {
      order.push(`${name} told`);
      setTimeout(() => {
        order.push(`${name} stopped`);
        resolve();
      }, delayMs);
    }, { once: true });
  });
}

Deno.test("StopSequence.stop() stops the steps in order, each after the previous one ended", async () => {
  const stops = new StopSequence();
  const order: string[] = [];
  for (const step of [...STOP_STEPS].reverse()) {
    stops.track(step, step, part(stops.signal(step), step, order, 5));
  }
  const outcome = await stops.stop(5_000);
  assert.equal(outcome.ok, true);
  assert.deepEqual(outcome.pending, []);
  assert.deepEqual(order, STOP_STEPS.flatMap((s) => [`${s} told`, `${s} stopped`]));
});

Deno.test("StopSequence.stop() names what is still running at the deadline", async () => {
  const stops = new StopSequence();
  const order: string[] = [];
  stops.track("controllers", "controllers", part(stops.signal("controllers"), "c", order));
  stops.track("informers", "stuck watch", new Promise(() => {}));
  stops.track("server", "health server", part(stops.signal("server"), "s", order));
  const began = performance.now();
  const outcome = await stops.stop(100);
  assert.equal(outcome.ok, false);
  assert.deepEqual(outcome.pending, ["stuck watch", "health server"]);
  assert.ok(performance.now() - began < 2_000);
});

Deno.test("StopSequence.track() counts a part that failed as stopped", async () => {
  const stops = new StopSequence();
  stops.track("background", "reloader", Promise.reject(new Error("boom")));
  assert.equal((await stops.stop(1_000)).ok, true);
});

Deno.test("StopSequence.stop(): a second signal tells every remaining step at once and bounds the rest", async () => {
  const stops = new StopSequence();
  const order: string[] = [];
  const hurry = new AbortController();
  // the controllers never stop on their own (a write stuck on a dead connection)
  stops.track("controllers", "stuck controller", new Promise(() => {}));
  stops.track("background", "keepalived", part(stops.signal("background"), "keepalived", order));
  stops.track("server", "health server", part(stops.signal("server"), "server", order));
  const began = performance.now();
  const stopping = stops.stop(60_000, hurry.signal, 200);
  await holdsFor("before the second signal only the first step is told", () => order.length === 0, {
    forMs: 50,
  });
  hurry.abort();
  const outcome = await stopping;
  const ms = performance.now() - began;
  assert.equal(outcome.ok, false);
  assert.deepEqual(outcome.pending, ["stuck controller"]);
  assert.deepEqual(order.filter((o) => o.endsWith("stopped")).sort(), [
    "keepalived stopped",
    "server stopped",
  ]);
  assert.ok(ms < 10_000, `stopped after ${ms} ms, the deadline was 60 s`);
});

Deno.test("StopSequence.stop(): everything stopping in the grace after a second signal is ok", async () => {
  const stops = new StopSequence();
  const order: string[] = [];
  const hurry = new AbortController();
  hurry.abort();
  for (const step of STOP_STEPS) stops.track(step, step, part(stops.signal(step), step, order, 5));
  const outcome = await stops.stop(60_000, hurry.signal, 5_000);
  assert.equal(outcome.ok, true);
  // told at once, not one after another
  assert.deepEqual(order.slice(0, 4), STOP_STEPS.map((s) => `${s} told`));
});
