import assert from "node:assert/strict";
import { runBounded } from "../../../../providers/baremetal/run_bounded.ts";

Deno.test("runBounded returns the exit code and both outputs apart", async () => {
  const run = await runBounded(["sh", "-c", "echo out; echo err >&2; exit 3"], 30_000);
  assert.deepEqual(run, { code: 3, stdout: "out\n", stderr: "err\n", timedOut: false });
});

Deno.test("runBounded ends a command that outlives its deadline and says so", async () => {
  const run = await runBounded(["sleep", "30"], 100);
  assert.equal(run.timedOut, true);
  assert.notEqual(run.code, 0);
});

Deno.test("runBounded refuses an empty command", async () => {
  await assert.rejects(() => runBounded([], 1_000), TypeError);
});
