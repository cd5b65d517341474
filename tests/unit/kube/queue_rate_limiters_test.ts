import assert from "node:assert/strict";
import {
  bucketRateLimiter,
  defaultControllerRateLimiter,
  itemExponentialRateLimiter,
  maxOfRateLimiter,
  serviceRateLimiter,
} from "../../../src/kube/queue_rate_limiters.ts";
import { FakeClock } from "../_fakes/fake_clock.ts";

Deno.test("itemExponentialRateLimiter() doubles per failure from the base and caps at the max", () => {
  const limiter = itemExponentialRateLimiter(5, 100);
  const delays = Array.from({ length: 7 }, () => limiter.when("a"));
  assert.deepEqual(delays, [5, 10, 20, 40, 80, 100, 100]);
  assert.equal(limiter.numRequeues("a"), 7);
  assert.equal(limiter.when("b"), 5, "keys back off independently");
});

Deno.test("itemExponentialRateLimiter() forget() resets the backoff of that key only", () => {
  const limiter = itemExponentialRateLimiter(5, 1000);
  limiter.when("a");
  limiter.when("a");
  limiter.when("b");
  limiter.forget("a");
  assert.equal(limiter.numRequeues("a"), 0);
  assert.equal(limiter.when("a"), 5);
  assert.equal(limiter.when("b"), 10);
});

Deno.test("itemExponentialRateLimiter() stays at the cap after very many failures", () => {
  const limiter = itemExponentialRateLimiter(5, 1_000_000);
  let last = 0;
  for (let i = 0; i < 2000; i++) last = limiter.when("a");
  assert.equal(last, 1_000_000);
});

Deno.test("itemExponentialRateLimiter() rejects a base above the max", () => {
  assert.throws(() => itemExponentialRateLimiter(10, 5), RangeError);
  assert.throws(() => itemExponentialRateLimiter(0, 5), RangeError);
});

Deno.test("bucketRateLimiter() lets a burst through, then spaces reservations at 1/qps", () => {
  const clock = new FakeClock();
  const limiter = bucketRateLimiter(10, 100, { clock });
  for (let i = 0; i < 100; i++) assert.equal(limiter.when(`k${i}`), 0);
  assert.equal(Math.round(limiter.when("x")), 100);
  assert.equal(Math.round(limiter.when("y")), 200);
  clock.advance(1000); // refills 10 tokens, 2 of them already reserved
  for (let i = 0; i < 8; i++) assert.equal(limiter.when(`z${i}`), 0);
  assert.equal(Math.round(limiter.when("w")), 100);
  assert.equal(limiter.numRequeues("x"), 0);
});

Deno.test("maxOfRateLimiter() takes the longest delay and forgets in every limiter", () => {
  const clock = new FakeClock();
  const limiter = maxOfRateLimiter(
    itemExponentialRateLimiter(5, 1000),
    bucketRateLimiter(1, 1, { clock }),
  );
  assert.equal(limiter.when("a"), 5); // bucket had one token
  assert.equal(limiter.when("a"), 1000); // bucket now 1 s in debt
  assert.equal(limiter.numRequeues("a"), 2);
  limiter.forget("a");
  assert.equal(limiter.numRequeues("a"), 0);
});

Deno.test("defaultControllerRateLimiter() starts at 5 ms and caps at 1000 s per key", () => {
  const clock = new FakeClock();
  const limiter = defaultControllerRateLimiter({ clock });
  assert.equal(limiter.when("a"), 5);
  assert.equal(limiter.when("a"), 10);
  // keep the bucket out of the way: one call per simulated second
  let last = 0;
  for (let i = 0; i < 40; i++) {
    clock.advance(1000);
    last = limiter.when("a");
  }
  assert.equal(last, 1_000_000);
});

Deno.test("serviceRateLimiter() backs off from 5 s to 300 s", () => {
  const limiter = serviceRateLimiter();
  const delays = Array.from({ length: 8 }, () => limiter.when("default/web"));
  assert.deepEqual(delays, [5000, 10000, 20000, 40000, 80000, 160000, 300000, 300000]);
});
