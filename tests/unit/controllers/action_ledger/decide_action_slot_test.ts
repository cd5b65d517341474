import assert from "node:assert/strict";
import {
  decideActionSlot,
  type SeenAction,
} from "../../../../src/controllers/action_ledger/decide_action_slot.ts";

const T0 = 1_800_000_000_000;
const seen = (seenMs: number, count = 1, at = "2020-01-01T00:00:00Z"): SeenAction => ({
  target: "w-1",
  at,
  count,
  seenMs,
});

Deno.test("decideActionSlot counts each action for one window from its first sighting", () => {
  const actions = [seen(T0), seen(T0 + 5_000)];
  const decide = (nowMs: number) => decideActionSlot({ actions, nowMs, max: 2, windowMs: 60_000 });
  assert.deepEqual(decide(T0 + 9_000), { free: false, counted: 2, freeAtMs: T0 + 60_000 });
  assert.deepEqual(decide(T0 + 59_999), { free: false, counted: 2, freeAtMs: T0 + 60_000 });
  assert.deepEqual(decide(T0 + 60_000), { free: true, counted: 1 });
  assert.deepEqual(decide(T0 + 65_000), { free: true, counted: 0 });
});

Deno.test("decideActionSlot ignores the stored time: a writer's clock ahead or behind changes nothing", () => {
  const ahead = [seen(T0, 1, "2099-01-01T00:00:00Z"), seen(T0, 1, "2099-01-01T00:00:00Z")];
  const behind = [seen(T0, 1, "1999-01-01T00:00:00Z"), seen(T0, 1, "1999-01-01T00:00:00Z")];
  for (const actions of [ahead, behind]) {
    assert.equal(
      decideActionSlot({ actions, nowMs: T0 + 1, max: 2, windowMs: 60_000 }).free,
      false,
    );
    assert.equal(
      decideActionSlot({ actions, nowMs: T0 + 60_000, max: 2, windowMs: 60_000 }).free,
      true,
    );
  }
});

Deno.test("decideActionSlot: a sighting after now (this clock stepped back) counts as seen now", () => {
  const actions = [seen(T0 + 3_600_000)];
  const decide = (nowMs: number) => decideActionSlot({ actions, nowMs, max: 1, windowMs: 60_000 });
  assert.deepEqual(decide(T0), { free: false, counted: 1, freeAtMs: T0 + 60_000 });
});

Deno.test("decideActionSlot: unaccounted actions take every slot for one window; max 0 is never", () => {
  const actions = [seen(T0, Infinity)];
  assert.deepEqual(decideActionSlot({ actions, nowMs: T0 + 1_000, max: 1000, windowMs: 60_000 }), {
    free: false,
    counted: Infinity,
    freeAtMs: T0 + 60_000,
  });
  assert.equal(
    decideActionSlot({ actions, nowMs: T0 + 60_000, max: 1, windowMs: 60_000 }).free,
    true,
  );
  assert.deepEqual(decideActionSlot({ actions: [], nowMs: T0, max: 0, windowMs: 60_000 }), {
    free: false,
    counted: 0,
  });
});

Deno.test("decideActionSlot: folded actions count together; the slot frees when enough have left", () => {
  const actions = [seen(T0, 3), seen(T0 + 10_000), seen(T0 + 20_000)];
  const decide = (nowMs: number) => decideActionSlot({ actions, nowMs, max: 2, windowMs: 60_000 });
  // 5 counted: the folded three and the one at +10 s must leave for fewer than 2 to remain
  assert.deepEqual(decide(T0 + 30_000), { free: false, counted: 5, freeAtMs: T0 + 70_000 });
  assert.equal(decide(T0 + 70_000).free, true);
});
