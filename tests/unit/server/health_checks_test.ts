import assert from "node:assert/strict";
import { HealthChecks } from "../../../src/server/health_checks.ts";

Deno.test("HealthChecks.evaluate() reports ping while no check is registered", () => {
  const checks = new HealthChecks();
  assert.deepEqual(checks.evaluate(), {
    ok: true,
    results: [{ name: "ping", ok: true, excluded: false }],
    unmatchedExcludes: [],
  });
});

Deno.test("HealthChecks.evaluate() keeps reasons, counts throws as failures, honours remove()", () => {
  const checks = new HealthChecks();
  checks.add("a", () => ({ ok: false, reason: "lease expired" }));
  checks.add("b", () => {
    throw new Error("boom");
  });
  checks.add("c", () => ({ ok: true }));
  const report = checks.evaluate(["c", "zzz"]);
  assert.equal(report.ok, false);
  assert.deepEqual(report.results, [
    { name: "a", ok: false, reason: "lease expired", excluded: false },
    { name: "b", ok: false, reason: "boom", excluded: false },
    { name: "c", ok: true, excluded: true },
  ]);
  assert.deepEqual(report.unmatchedExcludes, ["zzz"]);
  checks.remove("a");
  checks.remove("b");
  assert.equal(checks.evaluate().ok, true);
});
