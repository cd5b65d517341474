import assert from "node:assert/strict";
import type { HostReport } from "../../../src/status/host_report.ts";
import { decodeHostReport } from "../../../src/status/host_report.ts";
import { encodeHostReport } from "../../../src/status/encode_host_report.ts";
import { formatStatusText } from "../../../src/status/format_status.ts";
import { inventoryAgreement } from "../../../src/status/inventory_agreement.ts";
import { heartbeatLease, lbService, leaderLease, report, statusOf } from "./_leases.ts";

const A = "a".repeat(64);
const B = "b".repeat(64);

function on(rep: HostReport, sha256: string): HostReport {
  return { ...rep, inventory: { sha256, since: "2026-01-01T11:00:00.000Z" } };
}

Deno.test("status: an address a host serves that no Service holds is a problem, never Healthy", () => {
  // a forged or broken report: a public resolver and VRRP's own multicast group
  const rogue = report("cp-2", ["8.8.8.8", "224.0.0.18"]);
  const status = statusOf({
    services: [lbService("shop", "web", ["10.0.0.150"])],
    leases: [heartbeatLease("cp-1", report("cp-1", ["10.0.0.150"])), heartbeatLease("cp-2", rogue)],
    leaderLease: leaderLease("cp-1_x"),
    nowMs: Date.parse("2026-01-01T12:00:00Z"),
  });
  const problems = status.problems.filter((p) => p.includes("no Service holds"));
  assert.deepEqual(problems, [
    "host cp-2 serves 8.8.8.8, which no Service holds and which is no control-plane VIP",
    "host cp-2 serves 224.0.0.18, which no Service holds and which is no control-plane VIP",
  ]);
  assert.equal(status.vips.find((v) => v.vip === "8.8.8.8")?.problem, "no-service");
  const text = formatStatusText(status, { color: false });
  assert.doesNotMatch(text, /Healthy/);
  assert.match(text, /8\.8\.8\.8 .*NO SERVICE: cp-2/);
});

Deno.test("status: the control-plane VIP needs no Service (from the inventory, or an announcement that serves it)", () => {
  const cp: HostReport = {
    ...report("cp-1", []),
    announcements: [{
      announcer: "keepalived",
      name: "keelson_cp_v4",
      state: "holding",
      observed: "daemon",
      since: "2026-01-01T11:59:00.000Z",
      vips: ["10.0.0.5"],
      serves: "control-plane",
    }],
    vips: [{ ip: "10.0.0.5", since: "2026-01-01T11:58:00.000Z" }],
  };
  const input = {
    services: [],
    leases: [heartbeatLease("cp-1", cp)],
    leaderLease: leaderLease("cp-1_x"),
    nowMs: Date.parse("2026-01-01T12:00:00Z"),
  };
  assert.deepEqual(statusOf(input).problems, []);
  assert.deepEqual(statusOf({ ...input, controlPlaneVips: new Set(["10.0.0.5"]) }).problems, []);
  // the inventory is the authority when known: the same address is then no control-plane VIP
  assert.equal(
    statusOf({ ...input, controlPlaneVips: new Set(["10.0.0.6"]) }).vips[0]?.problem,
    "no-service",
  );
  // the announcement says what it serves, whatever its announcer names it
  const { serves: _, ...unmarked } = cp.announcements[0]!;
  const named = { ...cp, announcements: [{ ...unmarked, name: "cp_vip" }] };
  const marked = {
    ...cp,
    announcements: [{ ...unmarked, name: "cp_vip", serves: "control-plane" as const }],
  };
  assert.equal(
    statusOf({ ...input, leases: [heartbeatLease("cp-1", named)] }).vips[0]?.problem,
    "no-service",
  );
  assert.deepEqual(statusOf({ ...input, leases: [heartbeatLease("cp-1", marked)] }).problems, []);
});

Deno.test("status: Healthy only once every serving host of the inventory has reported", () => {
  const input = {
    services: [lbService("shop", "web", ["10.0.0.150"])],
    leases: [heartbeatLease("cp-1", report("cp-1", ["10.0.0.150"]))],
    leaderLease: leaderLease("cp-1_x"),
    nowMs: Date.parse("2026-01-01T12:00:00Z"),
    inventory: new Set(["cp-1", "cp-2", "w-1"]),
  };
  assert.deepEqual(statusOf({ ...input, mustReport: new Set(["cp-1"]) }).problems, []);
  const status = statusOf({ ...input, mustReport: new Set(["cp-1", "cp-2"]) });
  assert.deepEqual(status.problems, [
    "serving host cp-2 has never reported (no heartbeat Lease)",
  ]);
  assert.doesNotMatch(formatStatusText(status, { color: false }), /Healthy/);
});

Deno.test("status: LoadBalancer Services without an address are listed as pending", () => {
  const pending = lbService("shop", "legacy", []);
  const status = statusOf({
    services: [lbService("shop", "web", ["10.0.0.150"]), pending],
    leases: [heartbeatLease("cp-1", report("cp-1", ["10.0.0.150"]))],
    leaderLease: leaderLease("cp-1_x"),
    nowMs: Date.parse("2026-01-01T12:00:00Z"),
  });
  assert.deepEqual(status.pending, [{ service: "shop/legacy", loadBalancerClass: undefined }]);
  assert.match(
    formatStatusText(status, { color: false }),
    /Pending Services.*\n.*\n {2}shop\/legacy/,
  );
});

Deno.test("status: hosts on another inventory than the leader are named; the --config file is compared", () => {
  const leases = [
    heartbeatLease("cp-1", on(report("cp-1", ["10.0.0.150"]), A)),
    heartbeatLease("cp-2", on(report("cp-2", []), A)),
    heartbeatLease("cp-3", on(report("cp-3", []), B)),
  ];
  const status = statusOf({
    services: [lbService("shop", "web", ["10.0.0.150"])],
    leases,
    leaderLease: leaderLease("cp-1_x"),
    nowMs: Date.parse("2026-01-01T12:00:00Z"),
    inventorySha256: B,
  });
  assert.deepEqual(status.problems, [
    "host cp-3 runs another inventory (sha256 bbbbbbbbbbbb, 1h00m ago by its clock) than the " +
    "leader cp-1 (sha256 aaaaaaaaaaaa)",
  ]);
  assert.deepEqual(status.inventory.others.map((o) => o.host), ["cp-3"]);
  assert.equal(status.inventory.file?.matches, false);
  const text = formatStatusText(status, { color: false });
  assert.match(text, /cp-3 .* bbbbbbbbbbbb \(OTHER\)/);
  assert.match(
    text,
    /the --config file \(sha256 bbbbbbbbbbbb\) is not the inventory the leader runs/,
  );
});

Deno.test("inventoryAgreement(): the leader's digest, else the one most hosts run; silent hosts do not count", () => {
  const beat = (host: string, sha256: string | undefined, fresh = true) => ({
    host,
    fresh,
    report: sha256 ? on(report(host, []), sha256) : report(host, []),
  });
  const three = [beat("cp-1", A), beat("cp-2", B), beat("cp-3", B)];
  assert.deepEqual(inventoryAgreement(three, "cp-1").others.map((o) => o.host), ["cp-2", "cp-3"]);
  const noLeader = inventoryAgreement(three, undefined);
  assert.equal(noLeader.reference?.from, "most-hosts");
  assert.deepEqual(noLeader.others.map((o) => o.host), ["cp-1"]);
  // a tie names every host; a silent host and one without a digest are not compared
  const tie = inventoryAgreement([beat("cp-1", A), beat("cp-2", B), beat("cp-3", A, false)], "x");
  assert.equal(tie.reference, undefined);
  assert.deepEqual(tie.others.map((o) => o.host), ["cp-1", "cp-2"]);
  assert.deepEqual(inventoryAgreement([beat("cp-1", undefined)], "cp-1").unreported, ["cp-1"]);
});

Deno.test("host report: the inventory digest is parsed strictly", () => {
  const good = on(report("cp-1", []), A);
  const decoded = decodeHostReport(encodeHostReport(good));
  assert.ok(!("error" in decoded));
  assert.deepEqual(decoded.inventory, good.inventory);
  for (const bad of ["A".repeat(64), "a".repeat(63), `${"a".repeat(63)}\n`]) {
    const text = JSON.stringify({
      ...good,
      inventory: { sha256: bad, since: good.inventory!.since },
    });
    assert.ok("error" in decodeHostReport(text), bad);
  }
  const extra = JSON.stringify({ ...good, inventory: { ...good.inventory, path: "/etc" } });
  assert.ok("error" in decodeHostReport(extra));
});
