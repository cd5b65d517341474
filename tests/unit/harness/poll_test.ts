import assert from "node:assert/strict";
import { holdsFor, pollUntil, settlesWithin, turns } from "../../_support/poll.ts";

Deno.test("pollUntil() returns the first value that is not undefined, null or false, with the time it took", async () => {
  let calls = 0;
  const waited = await pollUntil("the third call", () => ++calls >= 3 ? 0 : false, {
    intervalMs: 1,
  });
  assert.equal(waited.value, 0, "0 is a value, not 'not yet'");
  assert.equal(calls, 3);
  assert.ok(Number.isFinite(waited.ms));
});

Deno.test("pollUntil() fails on its bound, naming what never happened, the last error and the context", async () => {
  let calls = 0;
  await assert.rejects(
    () =>
      pollUntil("a thing that never comes", () => {
        calls++;
        throw new Error("not reachable");
      }, { timeoutMs: 30, intervalMs: 5, retryErrors: true, context: () => "state: empty" }),
    /^Error: timed out after 30 ms waiting for a thing that never comes: last error: Error: not reachable\nstate: empty$/,
  );
  assert.ok(calls > 1, "errors were retried");
});

Deno.test("pollUntil() rethrows a probe's error at once unless told to retry", async () => {
  let calls = 0;
  await assert.rejects(
    () =>
      pollUntil("x", () => {
        calls++;
        throw new Error("broken probe");
      }),
    /broken probe/,
  );
  assert.equal(calls, 1);
});

Deno.test("holdsFor() passes when the probe holds for the whole window", async () => {
  let looks = 0;
  await holdsFor("a steady thing", () => ++looks > 0, { forMs: 30, intervalMs: 5 });
  assert.ok(looks > 2, `looked ${looks} times`);
});

Deno.test("holdsFor() fails at the first look where the probe stops holding, not at the window's end", async () => {
  let looks = 0;
  const began = performance.now();
  await assert.rejects(
    () =>
      holdsFor("no second write", () => ++looks < 3, {
        forMs: 60_000,
        intervalMs: 5,
        context: () => "writes: 2",
      }),
    /^Error: no second write stopped holding after \d+ ms\nwrites: 2$/,
  );
  assert.equal(looks, 3);
  assert.ok(performance.now() - began < 30_000);
});

Deno.test("settlesWithin() says whether a promise settled (a rejection counts) before its bound", async () => {
  assert.equal(await settlesWithin(Promise.resolve(1), 1_000), true);
  assert.equal(await settlesWithin(Promise.reject(new Error("x")), 1_000), true);
  assert.equal(await settlesWithin(new Promise(() => {}), 10), false);
});

Deno.test("turns() lets queued work run", async () => {
  let ran = false;
  setTimeout(() => ran = true, 0);
  await turns(2);
  assert.ok(ran);
});
