import assert from "node:assert/strict";
import { failureReason, runBounded } from "../../../../providers/baremetal/run_bounded.ts";

Deno.test("runBounded returns the exit code and both outputs apart", async () => {
  const run = await runBounded(["sh", "-c", "echo out; echo err >&2; exit 3"], 30_000);
  assert.deepEqual(run, {
    code: 3,
    stdout: "out\n",
    stderr: "err\n",
    timedOut: false,
    signal: null,
    timeoutMs: 30_000,
  });
});

Deno.test("runBounded ends a command that outlives its deadline and says so", async () => {
  const run = await runBounded(["sleep", "30"], 100);
  assert.equal(run.timedOut, true);
  assert.notEqual(run.code, 0);
});

Deno.test("runBounded refuses an empty command", async () => {
  await assert.rejects(() => runBounded([], 1_000), TypeError);
});

Deno.test("failureReason() is never empty: exit code and output, signal, or deadline", async () => {
  const reason = async (script: string, timeoutMs = 30_000) =>
    failureReason(await runBounded(["sh", "-c", script], timeoutMs));
  assert.equal(await reason("echo 'no such device' >&2; echo; exit 1"), "exited 1: no such device");
  assert.equal(
    await reason("echo a; echo b; exit 2"),
    "exited 2: a | b",
    "stdout when stderr is empty",
  );
  assert.equal(await reason("exit 3"), "exited 3 and printed nothing");
  assert.equal(await reason("kill -KILL $$"), "was killed by SIGKILL");
  assert.equal(await reason("exec sleep 30", 100), "did not finish within 100 ms and was stopped");
  const long = await reason("printf '%0600d' 0 >&2; exit 1");
  assert.equal(long.length, "exited 1: ".length + 500 + 1);
});
