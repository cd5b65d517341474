import assert from "node:assert/strict";
import { isFresh, parseHeartbeatLease, servingHostsByVip } from "../../../src/status/heartbeats.ts";
import { heartbeatLease, leaderLease, NOW, report } from "./_leases.ts";

Deno.test("parseHeartbeatLease() reads heartbeat Leases and ignores the others", () => {
  const h = parseHeartbeatLease(heartbeatLease("cp-1", report("cp-1", ["10.0.0.1"])));
  assert.equal(h?.host, "cp-1");
  assert.equal(h?.durationMs, 15_000);
  assert.equal(h?.renewMs, NOW - 1000);
  assert.ok(h && !("error" in h.report));
  assert.equal(parseHeartbeatLease(leaderLease("x")), undefined);
  assert.equal(
    parseHeartbeatLease({ metadata: { name: "keelson-host-Bad_Name" } }),
    undefined,
  );
});

Deno.test("parseHeartbeatLease() marks an unreadable or foreign report as an error", () => {
  const garbage = parseHeartbeatLease(heartbeatLease("cp-1", "{nope"));
  assert.deepEqual(garbage?.report, { error: "not JSON" });
  const foreign = parseHeartbeatLease(heartbeatLease("cp-1", report("cp-2", [])));
  assert.match((foreign?.report as { error: string }).error, /names host "cp-2"/);
  const missing = parseHeartbeatLease({ metadata: { name: "keelson-host-cp-1" }, spec: {} });
  assert.match((missing?.report as { error: string }).error, /no keelson.io\/data-plane/);
  assert.equal(missing && isFresh(missing, NOW), false);
});

Deno.test("servingHostsByVip() counts only fresh, readable heartbeats", () => {
  const beats = [
    heartbeatLease("cp-1", report("cp-1", ["10.0.0.1"])),
    heartbeatLease("cp-2", report("cp-2", ["10.0.0.1", "10.0.0.2"])),
    heartbeatLease("cp-3", report("cp-3", ["10.0.0.3"]), 16_000), // silent
    heartbeatLease("cp-4", "{bad"),
  ].map((l) => parseHeartbeatLease(l)!);
  assert.deepEqual(
    [...servingHostsByVip(beats, NOW)],
    [["10.0.0.1", ["cp-1", "cp-2"]], ["10.0.0.2", ["cp-2"]]],
  );
});
