import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { logLineMetrics } from "../../../src/log/log_metrics.ts";

Deno.test("keelson_log_lines_dropped_total has both reasons from the first scrape and follows the counts", async () => {
  const registry = new Registry();
  const counts = { full: 0, closed: 0 };
  logLineMetrics(registry, () => counts);
  const samples = async () =>
    (await registry.metrics()).split("\n").filter((l) => l.startsWith("keelson_log_lines_dropped"));
  assert.deepEqual(await samples(), [
    'keelson_log_lines_dropped_total{reason="full"} 0',
    'keelson_log_lines_dropped_total{reason="closed"} 0',
  ]);
  counts.full = 7;
  counts.closed = 2;
  assert.deepEqual(await samples(), [
    'keelson_log_lines_dropped_total{reason="full"} 7',
    'keelson_log_lines_dropped_total{reason="closed"} 2',
  ]);
  counts.closed = 5;
  assert.deepEqual(await samples(), [
    'keelson_log_lines_dropped_total{reason="full"} 7',
    'keelson_log_lines_dropped_total{reason="closed"} 5',
  ]);
  // a second registration (declareOnce) keeps the one counter
  logLineMetrics(registry, () => counts);
  assert.equal((await samples()).length, 2);
});
