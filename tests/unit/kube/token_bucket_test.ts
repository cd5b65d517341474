import assert from "node:assert/strict";
import { TokenBucket } from "../../../src/kube/token_bucket.ts";

function clock(start = 0) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

Deno.test("TokenBucket.reserve() allows a full burst at once, then spaces requests at 1/qps", () => {
  const time = clock();
  const bucket = new TokenBucket({ qps: 20, burst: 30, now: time.now });
  for (let i = 0; i < 30; i++) assert.equal(bucket.reserve(), 0);
  assert.equal(bucket.reserve(), 50);
  assert.equal(bucket.reserve(), 100);
});

Deno.test("TokenBucket.reserve() refills at qps tokens per second up to the burst", () => {
  const time = clock();
  const bucket = new TokenBucket({ qps: 10, burst: 2, now: time.now });
  assert.equal(bucket.reserve(), 0);
  assert.equal(bucket.reserve(), 0);
  assert.equal(bucket.reserve(), 100);
  time.advance(10_000);
  assert.equal(bucket.available(), 2);
  assert.equal(bucket.reserve(), 0);
});

Deno.test("TokenBucket.reserve() never waits when qps is 0 (limit disabled)", () => {
  const bucket = new TokenBucket({ qps: 0, burst: 0 });
  for (let i = 0; i < 1000; i++) assert.equal(bucket.reserve(), 0);
});

Deno.test("TokenBucket constructor rejects a burst below 1", () => {
  assert.throws(() => new TokenBucket({ qps: 5, burst: 0 }), RangeError);
});

Deno.test("TokenBucket.wait() sleeps the reserved delay with the injected sleep", async () => {
  const time = clock();
  const bucket = new TokenBucket({ qps: 4, burst: 1, now: time.now });
  const slept: number[] = [];
  const sleep = (ms: number) => {
    slept.push(ms);
    return Promise.resolve();
  };
  assert.equal(await bucket.wait(undefined, sleep), 0);
  assert.equal(await bucket.wait(undefined, sleep), 250);
  assert.deepEqual(slept, [250]);
});

Deno.test("TokenBucket.wait() rejects at once when the signal is already aborted", async () => {
  const bucket = new TokenBucket();
  await assert.rejects(bucket.wait(AbortSignal.abort()), { name: "AbortError" });
});
