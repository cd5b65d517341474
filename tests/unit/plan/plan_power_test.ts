import assert from "node:assert/strict";
import type { V1Lease } from "@kubernetes/client-node";
import { formatPlanPower, planPower } from "../../../src/plan/plan_power.ts";
import type { HostReport } from "../../../src/status/host_report.ts";
import { heartbeatLease, leaderLease, report } from "../status/_leases.ts";

const LEADER = { namespace: "kube-system", name: "keelson" };
const HOUR = 3_600_000;

/** cp-2's report: w-1 off, w-2 unknown; its times by its own clock, `skewMs` off true time. */
function cp2(skewMs: number, renewTime = "2026-01-01T12:00:00.000Z"): V1Lease {
  const at = (iso: string) => new Date(Date.parse(iso) + skewMs).toISOString();
  const rep: HostReport = {
    ...report("cp-2", []),
    power: [
      {
        machine: "w-2",
        state: "unknown",
        since: at("2026-01-01T11:59:00.000Z"),
        detail: "https://10.0.9.12/redfish/v1/Systems/1: no answer within 5 s",
      },
      {
        machine: "w-1",
        state: "off",
        since: at("2026-01-01T11:58:00.000Z"),
        answered: at("2026-01-01T11:59:59.000Z"),
        detail: 'PowerState "Off"',
      },
    ],
  };
  const lease = heartbeatLease("cp-2", rep);
  lease.spec!.renewTime = at(renewTime) as unknown as Date;
  return lease;
}

Deno.test("planPower(): ages are the Lease's renewTime minus the report's times, whatever the writer's clock says", () => {
  // a writer a day ahead and one an hour behind give the same ages: only their differences count
  for (const skew of [24 * HOUR, -HOUR, 0]) {
    const power = planPower([cp2(skew)], LEADER);
    assert.ok(power);
    assert.equal(power.from, "cp-2");
    assert.equal(power.chosen, "latest-renewal");
    assert.deepEqual(
      power.machines.map((m) => [m.machine, m.state, m.ageMs, m.answerAgeMs]),
      [["w-1", "off", 120_000, 1_000], ["w-2", "unknown", 60_000, null]],
    );
  }
});

Deno.test("planPower(): no age without a renewTime; a since after the renewal is no negative age", () => {
  const noRenew = cp2(0);
  delete noRenew.spec!.renewTime;
  const power = planPower([noRenew], LEADER)!;
  assert.equal(power.renewTime, null);
  assert.deepEqual(power.machines.map((m) => [m.ageMs, m.answerAgeMs]), [[null, null], [
    null,
    null,
  ]]);
  const text = formatPlanPower(power, { bmcConfigured: true, heartbeats: 1 }).join("\n");
  assert.match(text, /its Lease has no renewTime, so no age/);
  assert.match(text, /w-1 +off +PowerState "Off"/);

  const early = planPower([cp2(0, "2026-01-01T11:58:30.000Z")], LEADER)!;
  assert.deepEqual(early.machines.map((m) => m.ageMs), [30_000, 0]);
});

Deno.test("planPower(): the leader Lease's holder wins over a later renewal; without it, the latest renewal", () => {
  // cp-1 led before and died: its last report still carries power, and its clock runs ahead
  const old: HostReport = {
    ...report("cp-1", []),
    power: [{ machine: "w-1", state: "on", since: "2026-01-01T10:00:00.000Z", detail: "On" }],
  };
  const stale = heartbeatLease("cp-1", old);
  stale.spec!.renewTime = "2026-01-01T13:00:00.000Z" as unknown as Date;
  const leases = [stale, cp2(0)];

  const byLeader = planPower([...leases, leaderLease("cp-2.dc1.example_0b7e-4f")], LEADER)!;
  assert.equal(byLeader.from, "cp-2");
  assert.equal(byLeader.chosen, "leader");
  assert.deepEqual(byLeader.alsoReporting, ["cp-1"]);

  const latest = planPower(leases, LEADER)!;
  assert.equal(latest.from, "cp-1");
  assert.equal(latest.chosen, "latest-renewal");
  assert.deepEqual(latest.alsoReporting, ["cp-2"]);
  // a leader Lease under another name is not the inventory's
  const elsewhere = planPower([...leases, leaderLease("cp-2_x")], { ...LEADER, name: "other" })!;
  assert.equal(elsewhere.from, "cp-1");
  // a holder without power (a leader not polling yet): the latest renewal
  const noPower = planPower([...leases, leaderLease("cp-3_x")], LEADER)!;
  assert.equal(noPower.from, "cp-1");
});

Deno.test("planPower(): null when no readable heartbeat carries power; the text then says so only with a BMC configured", () => {
  assert.equal(planPower([], LEADER), null);
  assert.equal(planPower([heartbeatLease("cp-1", report("cp-1", []))], LEADER), null);
  assert.deepEqual(formatPlanPower(null, { bmcConfigured: false, heartbeats: 1 }), []);
  assert.match(
    formatPlanPower(null, { bmcConfigured: true, heartbeats: 1 }).join("\n"),
    /^\nMachine power: no heartbeat carries power/,
  );
  assert.match(
    formatPlanPower(null, { bmcConfigured: true, heartbeats: 0 }).join("\n"),
    /no heartbeat Lease in the input/,
  );
});

Deno.test("planPower(): a report with a control character in a detail is unreadable, never shown", () => {
  const rep = JSON.stringify({
    ...report("cp-2", []),
    power: [{
      machine: "w-1",
      state: "off",
      since: "2026-01-01T11:58:00.000Z",
      detail: "\x1b]0;owned\x07\u202eOff",
    }],
  });
  assert.equal(planPower([heartbeatLease("cp-2", rep)], LEADER), null);
});

Deno.test("formatPlanPower(): one line per machine with its age as of the renewal, escaped", () => {
  const power = planPower([cp2(5 * HOUR)], LEADER)!;
  // the strict schema keeps control characters out of a report; the text is escaped all the same
  power.machines[0]!.detail = 'PowerState "Off"\x1b[2J\nforged line';
  const lines = formatPlanPower(power, { bmcConfigured: true, heartbeats: 1 });
  const text = lines.join("\n");
  assert.match(
    text,
    /^\nMachine power \(from cp-2's heartbeat, renewed latest; ages as of its last renewal, 2026-01-01T17:00:00\.000Z by its own clock\):\n/,
  );
  assert.match(
    text,
    /\n {2}w-1 {2}off {6}for 2m00s, BMC last answered 1s before: PowerState "Off"\\x1b\[2J\\nforged line\n/,
  );
  assert.match(text, /\n {2}w-2 {2}unknown {2}for 1m00s, BMC never answered: https:\/\//);
  assert.ok(![...text].some((c) => c < " " && c !== "\n"), JSON.stringify(text));
  assert.equal(lines.length, 4);
});
