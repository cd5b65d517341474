import assert from "node:assert/strict";
import {
  heartbeatCleanupCommand,
  inventoryHosts,
  isRetired,
  splitRetired,
} from "../../../src/status/retired_heartbeats.ts";
import { heartbeatLease, judged, report } from "./_leases.ts";

/** A heartbeat a reader saw renewed `ageMs` ago (one older than its 20 s watch: never). */
const beat = (host: string, ageMs: number) =>
  judged([heartbeatLease(host, report(host, []), ageMs)])[0]!;

Deno.test("inventoryHosts(): every machine but those marked retired", () => {
  assert.deepEqual(
    [...inventoryHosts([
      { name: "cp-1", state: "active" },
      { name: "cp-2", state: "maintenance" },
      { name: "w-1", state: "shutdown" },
      { name: "w-2", state: "retired" },
      { name: "w-3" },
    ])],
    ["cp-1", "cp-2", "w-1", "w-3"],
  );
});

Deno.test("isRetired(): silent and not in the inventory; a host still renewing, or no inventory known, is never retired", () => {
  const inventory = new Set(["cp-1"]);
  // in the inventory: silent stays silent
  assert.equal(isRetired(beat("cp-1", 60_000), inventory), false);
  // removed and silent: retired
  assert.equal(isRetired(beat("cp-9", 60_000), inventory), true);
  // removed but still renewing: it still runs (and may hold VIPs), so it still counts
  assert.equal(isRetired(beat("cp-9", 1000), inventory), false);
  // just past its lease (15 s): retired from then on
  assert.equal(isRetired(beat("cp-9", 15_001), inventory), true);
  // no inventory: nobody can tell
  assert.equal(isRetired(beat("cp-9", 60_000), undefined), false);
  // an empty inventory knows every host is gone
  assert.equal(isRetired(beat("cp-1", 60_000), new Set()), true);
});

Deno.test("splitRetired() keeps the order; heartbeatCleanupCommand() names the Lease", () => {
  const split = splitRetired(
    [beat("cp-1", 60_000), beat("cp-8", 1000), beat("cp-9", 60_000)],
    new Set(["cp-1"]),
  );
  assert.deepEqual(split.current.map((h) => h.host), ["cp-1", "cp-8"]);
  assert.deepEqual(split.retired.map((h) => h.host), ["cp-9"]);
  assert.equal(
    heartbeatCleanupCommand("cp-9"),
    "kubectl -n kube-system delete lease keelson-host-cp-9",
  );
});
