import assert from "node:assert/strict";
import { reset } from "@logtape/logtape";
import { syncFailed } from "../../../../providers/baremetal/host_announcer.ts";
import { Registry } from "prom-client";
import { captureLogs } from "../../_fakes/captured_logs.ts";

Deno.test("syncFailed() logs and counts a failed sync of keepalived and of BIRD alike: one error line naming the announcer and the error", async () => {
  const records = await captureLogs();
  const registry = new Registry();
  try {
    const keepalived = syncFailed("keepalived", registry);
    const bird = syncFailed("bird", registry);
    // declared at zero before anything failed
    assert.match(
      await registry.metrics(),
      /^keelson_announcer_sync_failures_total\{announcer="bird"\} 0$/m,
    );
    await Promise.reject(new Error("disk full")).catch(keepalived);
    await Promise.reject(new Error("disk full")).catch(keepalived);
    await Promise.reject(new Error("socket gone")).catch(bird);
    const lines = records.map((r) => [r.level, r.category.join("."), r.properties]);
    assert.deepEqual(lines, [
      ["error", "keelson.agent", { name: "keepalived", error: "disk full" }],
      ["error", "keelson.agent", { name: "keepalived", error: "disk full" }],
      ["error", "keelson.agent", { name: "bird", error: "socket gone" }],
    ]);
    const text = await registry.metrics();
    assert.match(text, /^keelson_announcer_sync_failures_total\{announcer="keepalived"\} 2$/m);
    assert.match(text, /^keelson_announcer_sync_failures_total\{announcer="bird"\} 1$/m);
  } finally {
    await reset();
  }
});
