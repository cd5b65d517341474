import assert from "node:assert/strict";
import { MicroTime } from "../../../src/kube/micro_time.ts";

Deno.test("MicroTime serializes with six fractional digits, as kube-apiserver parses MicroTime", () => {
  const time = new MicroTime(Date.UTC(2026, 10, 21, 14, 18, 37, 93));
  assert.equal(time.toISOString(), "2026-11-21T14:18:37.093000Z");
  assert.equal(JSON.stringify({ renewTime: time }), '{"renewTime":"2026-11-21T14:18:37.093000Z"}');
  assert.equal(Date.parse(time.toISOString()), time.getTime(), "reads back as the same instant");
});
