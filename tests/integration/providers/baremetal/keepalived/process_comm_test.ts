import assert from "node:assert/strict";
import { processComm } from "../../../../../providers/baremetal/keepalived/process_comm.ts";
import { ROOT_URL, runAsShipped } from "../../../_harness/run_as_shipped.ts";

function spawnSleep(): Deno.ChildProcess {
  return new Deno.Command("sleep", { args: ["30"], stdout: "null", stderr: "null" }).spawn();
}

Deno.test("processComm() names a running process, and nothing for a gone or invalid pid", async () => {
  const child = spawnSleep();
  try {
    assert.equal(await processComm(child.pid), "sleep");
  } finally {
    child.kill("SIGKILL");
    await child.status;
  }
  assert.equal(await processComm(child.pid), undefined);
  for (const pid of [0, -1, 1.5, Number.NaN]) assert.equal(await processComm(pid), undefined);
});

Deno.test("processComm() works with the compiled binary's permissions, where reading /proc is refused", async () => {
  const child = spawnSleep();
  try {
    const run = await runAsShipped(`
import { processComm } from "${ROOT_URL}providers/baremetal/keepalived/process_comm.ts";
let direct;
try {
  direct = await Deno.readTextFile("/proc/${child.pid}/comm");
} catch (error) {
  direct = error.name;
}
console.log(JSON.stringify({ comm: await processComm(${child.pid}), direct }));
`);
    assert.equal(run.code, 0, run.stderr);
    // Deno 2.9.6 refuses any /proc read without --allow-all: why the name is read by `cat`
    assert.deepEqual(JSON.parse(run.stdout), { comm: "sleep", direct: "NotCapable" });
  } finally {
    child.kill("SIGKILL");
    await child.status;
  }
});
