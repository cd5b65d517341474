import assert from "node:assert/strict";
import {
  bgpHostsByVip,
  isFresh,
  parseHeartbeatLease,
  servingHostsByVip,
} from "../../../src/status/heartbeats.ts";
import { heartbeatLease, judged, leaderLease, NOW, report } from "./_leases.ts";

Deno.test("parseHeartbeatLease() reads heartbeat Leases and ignores the others", () => {
  const h = parseHeartbeatLease(heartbeatLease("cp-1", report("cp-1", ["10.0.0.1"])));
  assert.equal(h?.host, "cp-1");
  assert.equal(h?.durationMs, 15_000);
  assert.equal(h?.claimedRenewMs, NOW - 1000);
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
  const missing = judged([{ metadata: { name: "keelson-host-cp-1" }, spec: {} }])[0];
  assert.match((missing?.report as { error: string }).error, /no keelson.io\/data-plane/);
  assert.equal(missing && isFresh(missing), false);
});

Deno.test("servingHostsByVip() counts only fresh, readable heartbeats", () => {
  const beats = judged([
    heartbeatLease("cp-1", report("cp-1", ["10.0.0.1"])),
    heartbeatLease("cp-2", report("cp-2", ["10.0.0.1", "10.0.0.2"])),
    heartbeatLease("cp-3", report("cp-3", ["10.0.0.3"]), 16_000), // silent
    heartbeatLease("cp-4", "{bad"),
  ]);
  assert.deepEqual(
    [...servingHostsByVip(beats)],
    [["10.0.0.1", ["cp-1", "cp-2"]], ["10.0.0.2", ["cp-2"]]],
  );
});

Deno.test("bgpHostsByVip() counts host prefixes exported to Established peers of fresh hosts", () => {
  const bgp = (established: boolean) => [
    { peer: "tor-a", established, routes: ["10.0.30.10/32", "10.244.1.0/24", "fd00::5/128"] },
  ];
  const heartbeats = judged([
    heartbeatLease("cp-1", { ...report("cp-1", []), bgp: bgp(true) }),
    heartbeatLease("cp-2", { ...report("cp-2", []), bgp: bgp(false) }),
    heartbeatLease("cp-3", { ...report("cp-3", []), bgp: bgp(true) }, 20_000),
    heartbeatLease("cp-4", { ...report("cp-4", []), bgp: bgp(true) }),
  ]);
  assert.deepEqual(
    [...bgpHostsByVip(heartbeats)],
    [["10.0.30.10", ["cp-1", "cp-4"]], ["fd00::5", ["cp-1", "cp-4"]]],
  );
});
