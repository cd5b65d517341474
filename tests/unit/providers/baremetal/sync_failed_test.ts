import assert from "node:assert/strict";
import { reset } from "@logtape/logtape";
import { syncFailed } from "../../../../providers/baremetal/host_announcer.ts";
import { captureLogs } from "../../_fakes/captured_logs.ts";

Deno.test("syncFailed() logs a failed sync of keepalived and of BIRD alike: one error line naming the announcer and the error", async () => {
  const records = await captureLogs();
  try {
    await Promise.reject(new Error("disk full")).catch(syncFailed("keepalived"));
    await Promise.reject(new Error("socket gone")).catch(syncFailed("bird"));
    const lines = records.map((r) => [r.level, r.category.join("."), r.properties]);
    assert.deepEqual(lines, [
      ["error", "keelson.agent", { name: "keepalived", error: "disk full" }],
      ["error", "keelson.agent", { name: "bird", error: "socket gone" }],
    ]);
  } finally {
    await reset();
  }
});
