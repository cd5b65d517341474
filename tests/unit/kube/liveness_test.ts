import assert from "node:assert/strict";
import { ApiConnection } from "../../../src/kube/connection.ts";
import { type PingOutcome, startLiveness } from "../../../src/kube/liveness.ts";
import { createMetricsRegistry } from "../../../src/metrics/registry.ts";
import { pollUntil } from "../../_support/poll.ts";

const settings = { server: "http://127.0.0.1:1", source: "test" };

async function runPings(outcomes: PingOutcome[]): Promise<{ generation: number; pings: number[] }> {
  const registry = createMetricsRegistry();
  const connection = new ApiConnection(settings, registry);
  const pings: number[] = [];
  const done = Promise.withResolvers<void>();
  const liveness = startLiveness(connection, (generation) => {
    pings.push(generation.id);
    const outcome = outcomes.shift();
    if (outcomes.length === 0) done.resolve();
    return Promise.resolve(outcome ?? "answered");
  }, { registry, intervalMs: 1, timeoutMs: 1 });
  // the liveness timer does not keep the process alive: this one does, while the test waits
  const keepAlive = setInterval(() => {}, 1_000);
  await done.promise;
  // the ping after the last outcome shows that outcome was acted on
  const handed = pings.length;
  await pollUntil("the ping after the last outcome", () => pings.length > handed, {
    intervalMs: 1,
  });
  clearInterval(keepAlive);
  liveness.stop();
  const generation = connection.current.id;
  connection.close();
  return { generation, pings };
}

Deno.test("startLiveness() replaces the connection when a ping times out, and pings the new one", async () => {
  const { generation, pings } = await runPings(["answered", "timeout", "answered"]);
  assert.equal(generation, 2);
  assert.deepEqual(pings.slice(0, 3), [1, 1, 2]);
});

Deno.test("startLiveness() keeps a connection whose pings are answered or refused", async () => {
  const { generation } = await runPings(["answered", "failed", "answered"]);
  assert.equal(generation, 1, "a refused ping is an answer from the network, not a silent peer");
});

Deno.test("ApiConnection.replace() replaces a generation once", () => {
  const connection = new ApiConnection(settings, createMetricsRegistry());
  const first = connection.current;
  assert.equal(connection.replace(first.id, "ping-timeout", "test"), true);
  assert.equal(connection.replace(first.id, "request-deadline", "same dead one"), false);
  assert.equal(first.signal.aborted, true);
  assert.equal(connection.current.signal.aborted, false);
  connection.close();
  assert.equal(connection.current.signal.aborted, true);
});
