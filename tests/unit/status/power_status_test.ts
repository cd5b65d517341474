import assert from "node:assert/strict";
import { formatStatusText } from "../../../src/status/format_status.ts";
import { decodeHostReport, type HostReport } from "../../../src/status/host_report.ts";
import { fitHostReport } from "../../../src/status/fit_host_report.ts";
import { REPORT_LIST_LIMITS } from "../../../src/status/host_report_limits.ts";
import { heartbeatLease, leaderLease, manualObserver, NOW, report } from "./_leases.ts";
import { buildClusterStatus } from "../../../src/status/cluster_status.ts";
import { observeHeartbeats } from "../../../src/status/heartbeats.ts";

function withPower(host: string, power: HostReport["power"]): HostReport {
  return { ...report(host, []), power };
}

Deno.test("buildClusterStatus(): machines' power from the leader's fresh heartbeat, times by the reader's clock", () => {
  const power: HostReport["power"] = [
    {
      machine: "w-2",
      state: "unknown",
      since: "2026-01-01T11:59:00.000Z",
      detail: "https://10.0.9.12/redfish/v1/Systems/1: no answer within 5 s",
    },
    {
      machine: "w-1",
      state: "off",
      since: "2026-01-01T11:58:00.000Z",
      answered: "2026-01-01T11:59:59.000Z",
      detail: 'PowerState "Off"',
    },
  ];
  // cp-2's clock is an hour ahead: its times only count relative to its own renewal
  const ahead = (iso: string) => new Date(Date.parse(iso) + 3_600_000).toISOString();
  const skewed = {
    ...withPower(
      "cp-2",
      power.map((p) => ({
        ...p,
        since: ahead(p.since),
        ...(p.answered ? { answered: ahead(p.answered) } : {}),
      })),
    ),
  };
  const leaseOf = (host: string, rep: HostReport, ageMs: number, skewMs = 0) => {
    const lease = heartbeatLease(host, rep, ageMs);
    lease.spec!.renewTime = new Date(NOW - ageMs + skewMs).toISOString() as unknown as Date;
    return lease;
  };
  // a reader whose clock is right: it saw cp-2's heartbeat change 1 s before NOW
  const { observer, advance } = manualObserver(NOW - 10_000);
  const before = [
    leaseOf("cp-1", report("cp-1", []), 10_500),
    leaseOf("cp-2", skewed, 11_000, 3_600_000),
  ];
  const leases = [
    leaseOf("cp-1", report("cp-1", []), 500),
    leaseOf("cp-2", skewed, 1000, 3_600_000),
  ];
  observeHeartbeats(before, observer, true);
  advance(9_000);
  observeHeartbeats(leases, observer, true);
  advance(1_000);
  const status = buildClusterStatus({
    services: [],
    leases,
    leaderLease: leaderLease("cp-2_x"),
    observer,
    nowMs: NOW,
  });
  assert.equal(status.powerFrom, "cp-2");
  assert.deepEqual(status.power.map((p) => [p.machine, p.state, p.since]), [
    // held 1m59s at cp-2's renewal (by its clock), which this reader saw 1 s ago: the true times
    ["w-1", "off", "2026-01-01T11:58:00.000Z"],
    ["w-2", "unknown", "2026-01-01T11:59:00.000Z"],
  ]);
  assert.ok(status.problems.some((p) => p.startsWith("machine w-2: power unknown (https://")));
  const text = formatStatusText(status, { color: false });
  assert.match(text, /Machine power \(from the leader cp-2's heartbeat\)/);
  assert.match(text, /w-1 +off +2m00s +1s ago +PowerState "Off"/);
});

Deno.test("host report: power entries are validated strictly and cut at their bound", () => {
  const entry = {
    machine: "w-1",
    state: "off" as const,
    since: "2026-01-01T11:58:00.000Z",
    detail: "x",
  };
  const hostile = JSON.stringify({
    ...withPower("cp-1", [entry]),
    power: [{ ...entry, detail: "\x1b[2J" }],
  });
  assert.ok("error" in decodeHostReport(hostile));
  const bad = JSON.stringify({
    ...withPower("cp-1", [entry]),
    power: [{ ...entry, state: "Off" }],
  });
  assert.ok("error" in decodeHostReport(bad));
  const many = Array.from({ length: REPORT_LIST_LIMITS.power + 5 }, (_, i) => ({
    ...entry,
    machine: `w-${i}`,
  }));
  const fitted = fitHostReport(withPower("cp-1", many));
  assert.equal(fitted.power!.length, REPORT_LIST_LIMITS.power);
  assert.equal(fitted.omitted?.power, 5);
});

Deno.test("buildClusterStatus(): power only from the leader's heartbeat, never a newer one of another host", () => {
  const on: HostReport["power"] = [{
    machine: "w-1",
    state: "on",
    since: "2026-01-01T11:00:00.000Z",
    detail: 'PowerState "On"',
  }];
  const off: HostReport["power"] = [{ ...on[0]!, state: "off", detail: 'PowerState "Off"' }];
  const { observer, advance } = manualObserver(NOW - 10_000);
  const at = (ageLeader: number, ageOther: number) => [
    heartbeatLease("cp-1", withPower("cp-1", on), ageLeader),
    // a former leader's last report, renewed more recently than the leader's
    heartbeatLease("cp-2", withPower("cp-2", off), ageOther),
  ];
  observeHeartbeats(at(9_000, 9_500), observer, true);
  advance(8_000);
  const leases = at(2_000, 500);
  observeHeartbeats(leases, observer, true);
  advance(1_000);
  const build = (identity: string | undefined) =>
    buildClusterStatus({
      services: [],
      leases,
      leaderLease: identity === undefined ? undefined : leaderLease(identity),
      observer,
      nowMs: NOW,
    });
  // the agent's identity (`<machine>_<uuid>`) and client-go's (`<fqdn>_<uuid>`) both name cp-1
  for (const identity of ["cp-1_0b6c", "cp-1.dc1.example.net_0b6c"]) {
    const status = build(identity);
    assert.equal(status.powerFrom, "cp-1", identity);
    assert.deepEqual(status.power.map((p) => [p.machine, p.state]), [["w-1", "on"]]);
    assert.match(formatStatusText(status, { color: false }), /from the leader cp-1's heartbeat/);
  }
  // no leader known: no host's power is shown as the truth
  const leaderless = build(undefined);
  assert.equal(leaderless.powerFrom, undefined);
  assert.deepEqual(leaderless.power, []);
});
