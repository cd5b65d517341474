import assert from "node:assert/strict";
import {
  emptyLedger,
  formatLedger,
  MAX_LEDGER_BYTES,
  MAX_STORED_ACTIONS,
  parseLedger,
} from "../../../../src/controllers/action_ledger/ledger_record.ts";

const AT = "2026-12-02T00:00:09.900Z";

Deno.test("formatLedger and parseLedger round-trip actions, folded ones and unaccounted ones", () => {
  const ledger = emptyLedger();
  ledger.taint.push({ target: "w-1", at: AT, count: 1 }, { at: AT, count: 3 });
  ledger.fence.push({ at: AT, count: Infinity });
  ledger.delete.push({ target: "old-7.rack-2", at: "2026-12-02T00:00:09Z", count: 1 });
  const text = formatLedger(ledger);
  assert.equal(
    text,
    `{"v":1,"taint":[{"node":"w-1","at":"${AT}"},{"count":3,"at":"${AT}"}],` +
      `"fence":[{"all":true,"at":"${AT}"}],"delete":[{"node":"old-7.rack-2","at":"2026-12-02T00:00:09Z"}]}`,
  );
  assert.deepEqual(parseLedger(text), { ok: true, ledger });
  assert.deepEqual(parseLedger('{"v":1}'), { ok: true, ledger: emptyLedger() });
});

Deno.test("parseLedger refuses anything but the record: shape, names, times, counts, size", () => {
  const bad = [
    "",
    "null",
    "[]",
    '{"v":2}',
    '{"v":1,"taint":{}}',
    `{"v":1,"taint":[{"node":"W_1","at":"${AT}"}]}`,
    `{"v":1,"taint":[{"node":"w-1\\nFORGED","at":"${AT}"}]}`,
    `{"v":1,"taint":[{"node":"${"a".repeat(254)}","at":"${AT}"}]}`,
    '{"v":1,"taint":[{"node":"w-1","at":"yesterday"}]}',
    '{"v":1,"taint":[{"node":"w-1","at":"2026-13-45T00:00:00Z"}]}',
    '{"v":1,"taint":[{"node":"w-1","at":"2026-12-02T00:00:00+01:00"}]}',
    `{"v":1,"taint":[{"node":"w-1","at":"${AT}","count":2}]}`,
    `{"v":1,"fence":[{"count":0,"at":"${AT}"}]}`,
    `{"v":1,"fence":[{"count":1.5,"at":"${AT}"}]}`,
    `{"v":1,"fence":[{"count":1e9,"at":"${AT}"}]}`,
    `{"v":1,"fence":[{"all":false,"at":"${AT}"}]}`,
    `{"v":1,"delete":[${Array(MAX_STORED_ACTIONS + 1).fill(`{"count":1,"at":"${AT}"}`).join()}]}`,
    `{"v":1,"pad":"${"x".repeat(MAX_LEDGER_BYTES)}"}`,
  ];
  for (const text of bad) {
    const parsed = parseLedger(text);
    assert.equal(parsed.ok, false, `refused: ${text.slice(0, 80)}`);
  }
});
