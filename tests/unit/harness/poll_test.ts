import assert from "node:assert/strict";
import { pollUntil } from "../../_support/poll.ts";

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
