import assert from "node:assert/strict";
import { CoalescedRender } from "../../../../providers/baremetal/coalesced_render.ts";

Deno.test("CoalescedRender: a burst shares one render, a call during a render gets the next one, in call order", async () => {
  const started: string[] = [];
  const finish: (() => void)[] = [];
  const queue = new CoalescedRender((reason) => {
    started.push(reason);
    return new Promise<string>((resolve) => finish.push(() => resolve(reason)));
  });
  const burst = [queue.run("a"), queue.run("b"), queue.run("c")];
  await Promise.resolve();
  await Promise.resolve();
  assert.deepEqual(started, ["a"], "one render for the burst, with the first call's reason");
  const during = queue.run("d");
  const alsoDuring = queue.run("e");
  finish.shift()!();
  assert.deepEqual(await Promise.all(burst), ["a", "a", "a"]);
  // the next render starts only after the first ended, and serves both later calls
  for (let i = 0; i < 5 && started.length < 2; i++) await Promise.resolve();
  assert.deepEqual(started, ["a", "d"]);
  finish.shift()!();
  assert.deepEqual(await Promise.all([during, alsoDuring]), ["d", "d"]);
});

Deno.test("CoalescedRender: a render that throws rejects its callers and does not stop the next", async () => {
  let calls = 0;
  const queue = new CoalescedRender((reason) => {
    calls++;
    return calls === 1 ? Promise.reject(new Error(`broken ${reason}`)) : Promise.resolve(reason);
  });
  await assert.rejects(queue.run("first"), /broken first/);
  assert.equal(await queue.run("second"), "second");
});
