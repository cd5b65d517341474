import assert from "node:assert/strict";
import { firstEarlyStop } from "../../../../providers/baremetal/host_side.ts";

const pending = <T>() => new Promise<T>(() => {});
const nothingWithin = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([promise, new Promise((resolve) => setTimeout(() => resolve("nothing"), ms))]);

Deno.test("firstEarlyStop() names the part whose loops threw or returned before the stop signal", async () => {
  const signal = new AbortController().signal;
  const threw = await firstEarlyStop([
    ["keepalived side", pending()],
    ["BIRD side", Promise.reject(new Error("boom"))],
    ["unused", undefined],
  ], signal);
  assert.equal(threw.message, "Keelson's BIRD side stopped: boom");
  assert.equal((threw.cause as Error).message, "boom");
  const returned = await firstEarlyStop([["keepalived side", Promise.resolve()]], signal);
  assert.equal(returned.message, "Keelson's keepalived side stopped on its own");
});

Deno.test("firstEarlyStop() never resolves for parts that end after the stop signal", async () => {
  const stop = new AbortController();
  const part = Promise.withResolvers<void>();
  const failing = Promise.withResolvers<void>();
  const early = firstEarlyStop([["a", part.promise], ["b", failing.promise]], stop.signal);
  stop.abort();
  part.resolve();
  failing.reject(new Error("stopping"));
  assert.equal(await nothingWithin(early, 50), "nothing");
});
