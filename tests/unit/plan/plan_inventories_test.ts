import assert from "node:assert/strict";
import type { HostReport } from "../../../src/status/host_report.ts";
import { formatPlanInventories, planInventories } from "../../../src/plan/plan_inventories.ts";
import { heartbeatLease, report } from "../status/_leases.ts";

const CURRENT = "c".repeat(64);
const PROPOSED = "d".repeat(64);
const OTHER = "e".repeat(64);

function on(host: string, sha256?: string): HostReport {
  const r = report(host, []);
  return sha256 ? { ...r, inventory: { sha256, since: "2026-01-01T11:00:00.000Z" } } : r;
}

Deno.test("plan names the hosts on another inventory file than the one in force, and those already on the proposed one", () => {
  const leases = [
    heartbeatLease("cp-1", on("cp-1", CURRENT)),
    heartbeatLease("cp-2", on("cp-2", OTHER)),
    heartbeatLease("cp-3", on("cp-3", PROPOSED)),
    heartbeatLease("cp-4", on("cp-4")),
  ];
  const inventories = planInventories(leases, { current: CURRENT, proposed: PROPOSED });
  assert.deepEqual(inventories.hosts.map((h) => [h.host, h.is]), [
    ["cp-1", "current"],
    ["cp-2", "other"],
    ["cp-3", "proposed"],
    ["cp-4", "unreported"],
  ]);
  assert.deepEqual(
    formatPlanInventories(inventories, {
      current: "/etc/keelson/keelson.toml",
      proposed: "new.toml",
    }),
    [
      "",
      "Hosts not on the inventory in force:",
      "  on another file than /etc/keelson/keelson.toml: cp-2 (sha256 eeeeeeeeeeee)",
      "  already on the proposed new.toml: cp-3",
    ],
  );
  // every host on the file in force: nothing to say
  const same = planInventories([heartbeatLease("cp-1", on("cp-1", CURRENT))], {
    current: CURRENT,
    proposed: PROPOSED,
  });
  assert.deepEqual(formatPlanInventories(same, { current: "a", proposed: "b" }), []);
});
