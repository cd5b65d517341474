import assert from "node:assert/strict";
import {
  afterReadiness,
  type NodeMemory,
  noteFailure,
  NOTHING_REMEMBERED,
  remembersNothing,
  reportOnce,
  sweepOver,
} from "../../../../src/controllers/out_of_service/node_memory.ts";

Deno.test("afterReadiness(): NotReady starts an episode once; Ready ends it with its fencing and held Events, keeping the mismatch said", () => {
  const first = afterReadiness(NOTHING_REMEMBERED, false, 1_000);
  assert.equal(first.notReadySinceMs, 1_000);
  assert.equal(afterReadiness(first, false, 5_000), first);
  const during: NodeMemory = {
    ...first,
    lastFenceMs: 2_000,
    withdrawnInEpisodeMs: 900,
    reported: { "fence-blocked": "1000", mismatch: "off@900" },
  };
  assert.deepEqual(afterReadiness(during, true, 6_000), {
    withdrawnInEpisodeMs: 900,
    reported: { mismatch: "off@900" },
  });
  const fenced: NodeMemory = { notReadySinceMs: 1, reported: { "taint-blocked": "x" } };
  assert.ok(remembersNothing(afterReadiness(fenced, true, 6_000)));
});

Deno.test("reportOnce(): one Event per kind and episode; a new episode replaces the kind's old one", () => {
  let memory: NodeMemory = NOTHING_REMEMBERED;
  const said = (kind: "mismatch" | "taint-blocked", episode: string) => {
    const result = reportOnce(memory, kind, episode);
    memory = result.memory;
    return result.first;
  };
  assert.equal(said("mismatch", "off@1"), true);
  assert.equal(said("mismatch", "off@1"), false);
  assert.equal(said("taint-blocked", "off@1"), true);
  assert.equal(said("mismatch", "off@2"), true);
  assert.equal(said("mismatch", "off@1"), true, "the older episode is not remembered");
  assert.deepEqual(memory.reported, { mismatch: "off@1", "taint-blocked": "off@1" });
});

Deno.test("noteFailure(): said once per cause, cleared when the read works", () => {
  let step = noteFailure(NOTHING_REMEMBERED, "powerError", "timeout");
  assert.equal(step.first, true);
  step = noteFailure(step.memory, "powerError", "timeout");
  assert.equal(step.first, false);
  step = noteFailure(step.memory, "powerError", "refused");
  assert.equal(step.first, true);
  step = noteFailure(step.memory, "powerError", undefined);
  assert.equal(step.first, false);
  assert.ok(remembersNothing(step.memory));
  assert.equal(noteFailure(step.memory, "powerError", "timeout").first, true);
});

Deno.test("sweepOver() drops the sweep's start and its listing failure, nothing else", () => {
  assert.deepEqual(
    sweepOver({ podSweepStartedMs: 5, podListError: "x", lastFenceMs: 3 }),
    { lastFenceMs: 3 },
  );
});
