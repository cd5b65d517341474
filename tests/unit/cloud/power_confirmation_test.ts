import assert from "node:assert/strict";
import { offConfirmation } from "../../../src/cloud/power_confirmation.ts";
import type { PowerObservation } from "../../../src/cloud/provider.ts";

const off = (sinceMs: number, answeredAtMs?: number): PowerObservation => ({
  state: "off",
  sinceMs,
  ...(answeredAtMs !== undefined ? { answeredAtMs } : {}),
  detail: 'PowerState "Off"',
});

Deno.test("offConfirmation(): an Off is confirmed by a later Off answer at least the period after the first", () => {
  const policy = { confirmOffMs: 5000 };
  assert.deepEqual(offConfirmation(off(1000, 1000), 1000, policy), {
    confirmed: false,
    confirmableAtMs: 6000,
  });
  // however long ago the one answer was, it stays one answer
  assert.equal(offConfirmation(off(1000, 1000), 99_000, policy).confirmed, false);
  assert.equal(offConfirmation(off(1000, 5999), 6000, policy).confirmed, false);
  assert.deepEqual(offConfirmation(off(1000, 6000), 6000, policy), {
    confirmed: true,
    confirmableAtMs: 6000,
  });
  // an Off with no answer behind it waits for one
  assert.equal(offConfirmation(off(1000), 99_000, policy).confirmed, false);
});

Deno.test("offConfirmation(): on, unknown and a stale answer confirm nothing", () => {
  for (const state of ["on", "unknown"] as const) {
    assert.deepEqual(
      offConfirmation({ ...off(0, 9000), state }, 9000, { confirmOffMs: 1 }),
      { confirmed: false },
    );
  }
  const policy = { confirmOffMs: 1, maxAnswerAgeMs: 3000 };
  assert.equal(offConfirmation(off(0, 1000), 4000, policy).confirmed, true);
  assert.equal(offConfirmation(off(0, 1000), 4001, policy).confirmed, false, "a stalled loop");
});
