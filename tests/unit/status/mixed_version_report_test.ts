/**
 * A cluster in a rolling upgrade runs agents of every report shape: hosts whose report carries
 * one daemon's apply outcome in `reload.keepalived` and keepalived's instances in VRRP's words
 * (`instances`), hosts that list each announcer's outcome but still the instances in VRRP's
 * words, and hosts that list each announcer's announcements with a neutral state
 * (`announcements`). A new reader (the leader, `keelson status`) reads them all; a new writer still
 * fills in what an old reader requires, and an old reader's schema accepts it.
 */
import assert from "node:assert/strict";
import {
  bgpAnnouncedAddresses,
  decodeHostReport,
  HostReportSchema,
} from "../../../src/status/host_report.ts";
import { encodeHostReport } from "../../../src/status/encode_host_report.ts";
import { previousReportSchema } from "./_previous_report_schema.ts";
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
  // its VRRP instances become keepalived's announcements, in the neutral words
  assert.deepEqual(decoded.announcements, [{
    announcer: "keepalived",
    name: "keelson_v4_g0",
    state: "holding",
    observed: "daemon",
    since: "2026-01-01T11:59:00.000Z",
    vips: ["10.0.0.150"],
    serves: "services",
  }]);
  assert.equal("instances" in decoded, false);
});

Deno.test("the leader's heartbeat view (observeHeartbeats) reads an older agent's Lease whole", () => {
  const [beat] = judged([heartbeatLease("cp-2", OLD_REPORT)]);
  assert.ok(beat && !("error" in beat.report), "readable");
  assert.deepEqual(beat.report.announcers, [{ name: "keepalived", apply: "invalid" }]);
  assert.deepEqual(beat.report.announcements.map((i) => [i.announcer, i.state, i.observed]), [
    ["keepalived", "holding", "daemon"],
  ]);
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

/** A report as agents that listed each announcer's outcome, but the instances in VRRP's words, published it. */
const ANNOUNCERS_REPORT = JSON.stringify({
  v: 1,
  host: "cp-3",
  version: "0.10.0",
  instances: [
    {
      name: "keelson_v4_g0",
      state: "BACKUP",
      source: "fifo",
      since: "2026-01-01T11:59:00.000Z",
      vips: ["10.0.0.150"],
    },
    {
      name: "keelson_v4_g1",
      state: "FAULT",
      source: "addresses",
      since: "2026-01-01T11:59:30.000Z",
      vips: ["10.0.0.151"],
    },
  ],
  vips: [],
  reload: { ok: true, keepalived: "success" },
  announcers: [{ name: "keepalived", apply: "success" }, { name: "bird", apply: "success" }],
  pools: [],
});

Deno.test("decodeHostReport() reads a report that lists announcers but VRRP-worded instances: each state in the neutral words", () => {
  const decoded = decodeHostReport(ANNOUNCERS_REPORT);
  assert.ok(!("error" in decoded), JSON.stringify(decoded));
  assert.deepEqual(decoded.announcements.map((a) => [a.announcer, a.name, a.state, a.observed]), [
    ["keepalived", "keelson_v4_g0", "standby", "daemon"],
    ["keepalived", "keelson_v4_g1", "failed", "addresses"],
  ]);
  assert.equal(decoded.announcers?.length, 2);
});

Deno.test("buildClusterStatus() shows every host's state in the same words, whichever shape it published", () => {
  const status = statusOf({
    services: [lbService("shop", "web", ["10.0.0.150"])],
    leases: [
      heartbeatLease("cp-1", report("cp-1", [], { all: ["10.0.0.150"] })),
      heartbeatLease("cp-2", OLD_REPORT),
      heartbeatLease("cp-3", ANNOUNCERS_REPORT),
    ],
    leaderLease: leaderLease("cp-1_abc"),
    nowMs: NOW,
  });
  const row = status.vips.find((v) => v.vip === "10.0.0.150");
  assert.deepEqual(row?.states.map((s) => `${s.host}=${s.state}`), [
    "cp-1=standby",
    "cp-2=holding",
    "cp-3=standby",
  ]);
  assert.deepEqual(row?.hosts, ["cp-2"]);
});

/** A new host's report: keepalived's and another announcer's announcements, every state. */
function newReport() {
  const base = report("cp-1", ["10.0.0.150"], { all: ["10.0.0.150", "10.0.0.151"] });
  const states = ["failed", "stopped", "unknown"] as const;
  return {
    ...base,
    announcers: [
      { name: "keepalived", apply: "success" as const },
      { name: "bird", apply: "success" as const },
    ],
    announcements: [
      ...base.announcements,
      ...states.map((state, i) => ({
        announcer: "keepalived",
        name: `keelson_v6_g${i}`,
        state,
        observed: "addresses" as const,
        since: "2026-01-01T11:59:00.000Z",
        vips: [`fd00::${i + 1}`],
      })),
      {
        announcer: "bird",
        name: "vip_10_0_0_152",
        state: "holding" as const,
        observed: "daemon" as const,
        since: "2026-01-01T11:59:00.000Z",
        vips: ["10.0.0.152"],
      },
    ],
  };
}

Deno.test("encodeHostReport(): an older reader's schema accepts a new report, with keepalived's instances in VRRP's words", () => {
  const published = JSON.parse(encodeHostReport(newReport()));
  for (const keepalivedRequired of [false, true]) {
    const parsed = previousReportSchema({ keepalivedRequired }).safeParse(published);
    assert.ok(parsed.success, JSON.stringify(parsed.error?.issues[0]));
    // only keepalived's: an older reader knows no other announcer's instances
    assert.deepEqual(parsed.data.instances.map((i) => [i.name, i.state, i.source, i.vips]), [
      ["keelson_v4_g0", "MASTER", "fifo", ["10.0.0.150"]],
      ["keelson_v4_g1", "BACKUP", "fifo", ["10.0.0.151"]],
      ["keelson_v6_g0", "FAULT", "addresses", ["fd00::1"]],
      ["keelson_v6_g1", "STOP", "addresses", ["fd00::2"]],
      ["keelson_v6_g2", "UNKNOWN", "addresses", ["fd00::3"]],
    ]);
  }
  // a host running no keepalived still writes the list older readers require, empty
  const birdOnly = { ...newReport(), announcers: [{ name: "bird", apply: "success" as const }] };
  birdOnly.announcements = birdOnly.announcements.filter((a) => a.announcer === "bird");
  const parsed = previousReportSchema({ keepalivedRequired: true })
    .safeParse(JSON.parse(encodeHostReport(birdOnly)));
  assert.ok(parsed.success);
  assert.deepEqual(parsed.data.instances, []);
});

Deno.test("a new reader reads a new report in the neutral words only, the older fields dropped", () => {
  const current = newReport();
  const decoded = decodeHostReport(encodeHostReport(current));
  assert.deepEqual(decoded, current);
  assert.equal("instances" in decoded, false);
});

Deno.test("an older report cut at its bounds is not refused: the omitted counts keep the names older readers know", () => {
  const vips = Array.from({ length: 3000 }, (_, i) => `10.${100 + (i >> 8)}.${i & 255}.1`);
  const big = report("cp-1", vips, { all: vips });
  const published = JSON.parse(encodeHostReport(big));
  assert.ok(published.omitted, "cut");
  const parsed = previousReportSchema({ keepalivedRequired: false }).safeParse(published);
  assert.ok(parsed.success, JSON.stringify(parsed.error?.issues[0]));
});
