import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { registerPoolUsageGauges } from "../../../../../providers/baremetal/ipam/pool_usage_metrics.ts";

Deno.test("registerPoolUsageGauges() exports in use, total and free per pool and family", async () => {
  const registry = new Registry();
  let used = 3;
  registerPoolUsageGauges(registry, () => [
    { pool: "lan", family: 4, total: 14n, used },
    { pool: "lan", family: 6, total: 1n << 64n, used: 1 },
  ]);
  const text = await registry.metrics();
  assert.match(text, /keelson_allocator_addresses_in_use\{pool="lan",family="IPv4"\} 3/);
  assert.match(text, /keelson_allocator_addresses\{pool="lan",family="IPv4"\} 14/);
  assert.match(text, /keelson_allocator_addresses_free\{pool="lan",family="IPv4"\} 11/);
  assert.match(
    text,
    /keelson_allocator_addresses\{pool="lan",family="IPv6"\} 1844674407370955\d+/,
  );
  // a second registration (a reload) replaces the first instead of failing
  used = 5;
  registerPoolUsageGauges(registry, () => [{ pool: "new", family: 4, total: 4n, used: 4 }]);
  const after = await registry.metrics();
  assert.match(after, /keelson_allocator_addresses_free\{pool="new",family="IPv4"\} 0/);
  assert.doesNotMatch(after, /pool="lan"/);
});
