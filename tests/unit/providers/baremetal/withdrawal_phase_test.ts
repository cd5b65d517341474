import assert from "node:assert/strict";
import {
  nextWithdrawalPhase,
  type WithdrawalEvent,
  type WithdrawalPhase,
} from "../../../../providers/baremetal/withdrawal_phase.ts";

Deno.test("nextWithdrawalPhase(): every phase and event, as a table", () => {
  const phases: WithdrawalPhase[] = ["serving", "withdrawn", "failed", "returning"];
  const events: [string, WithdrawalEvent][] = [
    ["confirmed", { kind: "withdrew", confirmed: true }],
    ["unconfirmed", { kind: "withdrew", confirmed: false }],
    ["back", { kind: "back" }],
    ["taken", { kind: "file-taken" }],
  ];
  // rows: the phase before; columns: the events above
  const expected: Record<WithdrawalPhase, WithdrawalPhase[]> = {
    serving: ["withdrawn", "failed", "serving", "serving"],
    withdrawn: ["withdrawn", "failed", "returning", "withdrawn"],
    failed: ["withdrawn", "failed", "returning", "failed"],
    returning: ["withdrawn", "failed", "returning", "serving"],
  };
  for (const phase of phases) {
    const row = events.map(([, event]) => nextWithdrawalPhase(phase, event));
    assert.deepEqual(row, expected[phase], `from ${phase} (${events.map(([n]) => n).join(", ")})`);
  }
});
