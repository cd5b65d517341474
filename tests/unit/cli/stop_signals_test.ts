import assert from "node:assert/strict";
import { StopSignals } from "../../../src/cli/stop_signals.ts";

Deno.test("StopSignals: the first signal stops, the second hurries, later ones are ignored", () => {
  const signals = new StopSignals();
  assert.equal(signals.stop.aborted, false);
  assert.equal(signals.receive(), "stop");
  assert.equal(signals.stop.aborted, true);
  assert.equal(signals.hurry.aborted, false);
  assert.equal(signals.receive(), "hurry");
  assert.equal(signals.hurry.aborted, true);
  assert.equal(signals.receive(), "ignored");
});
