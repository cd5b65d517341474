/**
 * A cluster in a rolling upgrade runs agents of both report shapes: hosts whose report carries
 * one daemon's apply outcome in `reload.keepalived`, and hosts that list each announcer's. A new
 * reader (the leader, `keelson status`) reads both; a new writer still fills in what an old
 * reader requires.
 */
import assert from "node:assert/strict";
import {
  bgpAnnouncedAddresses,
  decodeHostReport,
  HostReportSchema,
} from "../../../src/status/host_report.ts";
import { encodeHostReport } from "../../../src/status/encode_host_report.ts";
import {
  heartbeatLease,
  judged,
  lbService,
  leaderLease,
  NOW,
  report,
  statusOf,
} from "./_leases.ts";

/** A report as agents before per-announcer outcomes published it (one keepalived instance). */
const OLD_REPORT = JSON.stringify({
  v: 1,
  host: "cp-2",
  version: "0.9.0",
  instances: [{
    name: "keelson_v4_g0",
    state: "MASTER",
    source: "fifo",
    since: "2026-01-01T11:59:00.000Z",
    vips: ["10.0.0.150"],
  }],
  vips: [{ ip: "10.0.0.150", since: "2026-01-01T11:58:00.000Z" }],
  reload: { ok: true, at: "2026-01-01T10:00:00.000Z", keepalived: "invalid" },
  pools: [],
  bgp: [{ peer: "tor-a", established: true, routes: ["10.0.0.150/32"] }],
});

Deno.test("decodeHostReport() reads an older agent's report: its keepalived outcome becomes its one announcer", () => {
  const decoded = decodeHostReport(OLD_REPORT);
  assert.ok(!("error" in decoded), JSON.stringify(decoded));
  assert.deepEqual(decoded.announcers, [{ name: "keepalived", apply: "invalid" }]);
  assert.deepEqual(decoded.reload, { ok: true, at: "2026-01-01T10:00:00.000Z" });
  assert.deepEqual(decoded.bgp, [{ peer: "tor-a", established: true, routes: ["10.0.0.150/32"] }]);
});

Deno.test("the leader's heartbeat view (observeHeartbeats) reads an older agent's Lease whole", () => {
  const [beat] = judged([heartbeatLease("cp-2", OLD_REPORT)]);
  assert.ok(beat && !("error" in beat.report), "readable");
  assert.deepEqual(beat.report.announcers, [{ name: "keepalived", apply: "invalid" }]);
  assert.deepEqual(beat.report.instances.map((i) => i.state), ["MASTER"]);
  assert.deepEqual(bgpAnnouncedAddresses(beat.report.bgp ?? []), ["10.0.0.150"]);
});

Deno.test("buildClusterStatus() judges an older agent's apply outcome as a new one's", () => {
  const status = statusOf({
    services: [lbService("shop", "web", ["10.0.0.150"])],
    leases: [
      heartbeatLease("cp-1", report("cp-1", [], { all: ["10.0.0.150"] })),
      heartbeatLease("cp-2", OLD_REPORT),
    ],
    leaderLease: leaderLease("cp-1_abc"),
    nowMs: NOW,
  });
  assert.deepEqual(status.problems, ["host cp-2: the last keepalived config apply was invalid"]);
  const cp2 = status.hosts.find((h) => h.host === "cp-2");
  assert.deepEqual(cp2?.announcers, [{ name: "keepalived", apply: "invalid" }]);
});

Deno.test("encodeHostReport() lists every announcer's outcome and keeps the field older readers require", () => {
  const current = {
    ...report("cp-1", []),
    announcers: [
      { name: "keepalived", apply: "success" as const },
      { name: "bird", apply: "error" as const },
    ],
  };
  const published = JSON.parse(encodeHostReport(current));
  assert.deepEqual(published.announcers, current.announcers);
  // an older reader's schema requires reload.keepalived: keepalived's outcome, or none
  assert.equal(published.reload.keepalived, "success");
  const birdOnly = { ...current, announcers: [{ name: "bird", apply: "error" as const }] };
  assert.equal(JSON.parse(encodeHostReport(birdOnly)).reload.keepalived, "none");
  // a new reader sees one shape: the announcers, no older field
  assert.deepEqual(decodeHostReport(encodeHostReport(current)), current);
});

Deno.test("status: a BIRD apply that failed is a problem, named for BIRD", () => {
  const failing = report("cp-2", []);
  failing.announcers = [{ name: "keepalived", apply: "success" }, { name: "bird", apply: "error" }];
  assert.equal(HostReportSchema.safeParse(failing).success, true);
  const status = statusOf({
    services: [],
    leases: [heartbeatLease("cp-1", report("cp-1", [])), heartbeatLease("cp-2", failing)],
    leaderLease: leaderLease("cp-1_abc"),
    nowMs: NOW,
  });
  assert.deepEqual(status.problems, ["host cp-2: the last bird config apply was error"]);
});
