import assert from "node:assert/strict";
import { decideProblems, type ProblemFacts } from "../../../src/status/decide_problems.ts";
import type { HostStatus, StatusModel, VipStatus } from "../../../src/status/status_model.ts";

const NOW = Date.parse("2026-01-01T12:00:00Z");

function model(overrides: Partial<StatusModel> = {}): StatusModel {
  return {
    now: new Date(NOW).toISOString(),
    judgedBy: { by: "reader" },
    observedMs: 20_000,
    leader: {
      identity: "cp-1_abc",
      renewTime: undefined,
      freshness: "fresh",
      ageMs: 1000,
      renewalSeen: true,
      expired: false,
    },
    vips: [],
    hosts: [],
    retired: [],
    inventoryKnown: true,
    pools: [],
    power: [],
    powerFrom: undefined,
    inventory: { reference: undefined, others: [], unreported: [], file: undefined },
    pending: [],
    servingHosts: [],
    ...overrides,
  };
}

function host(name: string, overrides: Partial<HostStatus> = {}): HostStatus {
  return {
    host: name,
    lastHeartbeat: "2026-01-01T11:59:59.000Z",
    freshness: "fresh",
    ageMs: 1000,
    renewalSeen: true,
    leaseMs: 15_000,
    silent: false,
    version: "1.0.0",
    reload: undefined,
    announcers: [],
    reportError: undefined,
    vipsServed: 0,
    omitted: undefined,
    bgp: undefined,
    bgpDown: false,
    inventory: undefined,
    otherInventory: false,
    ...overrides,
  };
}

function vip(address: string, overrides: Partial<VipStatus> = {}): VipStatus {
  return {
    vip: address,
    services: ["shop/web"],
    pool: "lan",
    hosts: [],
    superseded: [],
    maybeOn: [],
    bgpHosts: [],
    lastSeenOn: [],
    states: [],
    since: undefined,
    problem: undefined,
    ...overrides,
  };
}

const FACTS: ProblemFacts = {
  nowMs: NOW,
  dataPlaneReported: true,
  controlPlaneVips: { vips: new Set(["10.0.0.10"]), known: true },
  mustReport: undefined,
};

Deno.test("decideProblems(): a healthy model has no problem and no VIP row problem", () => {
  const decided = decideProblems(
    model({
      hosts: [host("cp-1"), host("cp-2")],
      vips: [
        vip("10.0.0.10", { services: [], hosts: ["cp-1"] }),
        vip("10.0.0.150", {
          hosts: ["cp-2"],
        }),
      ],
    }),
    { ...FACTS, mustReport: new Set(["cp-1", "cp-2"]) },
  );
  assert.deepEqual(decided.problems, []);
  assert.deepEqual([...decided.vips], []);
});

Deno.test("decideProblems(): each VIP row gets one serving problem, judged in order", () => {
  const status = model({
    hosts: [host("cp-1"), host("cp-2"), host("cp-3", { silent: true })],
    vips: [
      vip("10.0.0.150", { lastSeenOn: ["cp-3"] }),
      vip("10.0.0.151", { bgpHosts: ["cp-1", "cp-2"] }),
      vip("10.0.0.152", { maybeOn: ["cp-2"] }),
      vip("10.0.0.153"),
      vip("10.0.0.154", { hosts: ["cp-1", "cp-2"] }),
      vip("10.0.0.155", { lastSeenOn: ["cp-2"] }),
    ],
  });
  const decided = decideProblems(status, FACTS);
  assert.deepEqual(Object.fromEntries(decided.vips), {
    "10.0.0.150": "unknown",
    "10.0.0.152": "unknown",
    "10.0.0.153": "no-host",
    "10.0.0.154": "split-brain",
    "10.0.0.155": "unknown",
  });
  assert.deepEqual(decided.problems.slice(1), [
    "VIP 10.0.0.150 (shop/web) was last reported on cp-3, which went silent: whether it is served is unknown",
    "VIP 10.0.0.152 (shop/web) is listed by no host, but the report of cp-2 was cut at its size limit: whether it is served is unknown",
    "VIP 10.0.0.153 (shop/web) is served by no host",
    "VIP 10.0.0.154 (shop/web) is served by 2 hosts (split brain): cp-1, cp-2",
    "VIP 10.0.0.155 (shop/web) was last reported on cp-2, not seen renewing its heartbeat: whether it is served is unknown",
  ]);
  assert.match(decided.problems[0]!, /^host cp-3 is silent: no heartbeat for 1s \(lease 15s\)$/);
});

Deno.test("decideProblems(): while no host reports a data plane, a VIP listed by no host is not judged", () => {
  const decided = decideProblems(model({ vips: [vip("10.0.0.153")] }), {
    ...FACTS,
    dataPlaneReported: false,
  });
  assert.deepEqual(decided.problems, []);
  assert.deepEqual([...decided.vips], []);
});

Deno.test("decideProblems(): an address no Service holds counts its BGP hosts only when the control-plane VIPs are known", () => {
  const status = model({
    vips: [
      vip("10.0.0.10", { services: [], hosts: ["cp-1"] }),
      vip("10.0.0.20", { services: [], bgpHosts: ["cp-2"] }),
      vip("10.0.0.30", { services: [], hosts: ["cp-1", "cp-2"] }),
    ],
  });
  const known = decideProblems(status, FACTS);
  assert.deepEqual(known.problems, [
    "VIP 10.0.0.30 is served by 2 hosts (split brain): cp-1, cp-2",
    "host cp-2 serves 10.0.0.20, which no Service holds and which is no control-plane VIP",
    "hosts cp-1, cp-2 serve 10.0.0.30, which no Service holds and which is no control-plane VIP",
  ]);
  // the first problem a row gets is the one it shows
  assert.deepEqual(Object.fromEntries(known.vips), {
    "10.0.0.20": "no-service",
    "10.0.0.30": "split-brain",
  });
  const guessed = decideProblems(status, {
    ...FACTS,
    controlPlaneVips: { vips: new Set(["10.0.0.10"]), known: false },
  });
  assert.ok(!guessed.problems.some((p) => p.includes("10.0.0.20")), guessed.problems.join("\n"));
});

Deno.test("decideProblems(): leader, hosts, control plane, inventory, pools and power, in that order", () => {
  const status = model({
    leader: {
      identity: undefined,
      renewTime: undefined,
      freshness: "silent",
      ageMs: undefined,
      renewalSeen: false,
      expired: true,
    },
    inventoryKnown: false,
    hosts: [
      host("cp-1", {
        silent: true,
        renewalSeen: false,
        ageMs: 30_000,
        lastHeartbeat: "2026-01-01T11:00:00.000Z",
      }),
      host("cp-2", {
        reload: { ok: false } as HostStatus["reload"],
        announcers: [{ name: "keepalived", apply: "not_running" }],
        reportError: "not JSON",
        bgp: [{ peer: "tor-a", established: false, routes: 0 }],
        bgpDown: true,
      }),
    ],
    inventory: {
      reference: { sha256: "b".repeat(64), from: "leader", host: "cp-2" },
      others: [{ host: "cp-1", sha256: "a".repeat(64), since: "2026-01-01T11:59:00.000Z" }],
      unreported: [],
      file: undefined,
    } as StatusModel["inventory"],
    pools: [{ pool: "lan", family: "IPv4", total: 10, used: 10, full: true }],
    power: [{
      machine: "w-1",
      state: "unknown",
      since: undefined,
      answered: undefined,
      detail: "no answer",
    }],
  });
  const decided = decideProblems(status, { ...FACTS, mustReport: new Set(["cp-9", "cp-1"]) });
  assert.deepEqual(decided.problems.map((p) => p.split(/[:(]/)[0]!.trim()), [
    "no leader",
    "host cp-1 is silent",
    "host cp-2 published an unreadable report",
    "host cp-2",
    "host cp-2",
    "host cp-2",
    "serving host cp-9 has never reported",
    "host cp-1 runs another inventory",
    "pool lan",
    "machine w-1",
  ]);
  assert.match(decided.problems[1]!, /its last renewal says 1h00m ago, by its own clock/);
  assert.match(decided.problems[1]!, /if it was removed from the inventory: kubectl/);
  assert.match(decided.problems[3]!, /the last configuration reload failed$/);
  assert.match(decided.problems[4]!, /every BGP session is down \(tor-a\)$/);
  assert.match(decided.problems[5]!, /keepalived is not running/);
  assert.match(decided.problems[7]!, /1m00s ago by its clock\) than the leader cp-2/);
  assert.equal(decided.problems[8], "pool lan (IPv4) is 100% used (10 of 10)");
  assert.equal(decided.problems[9], "machine w-1: power unknown (no answer)");
});

Deno.test("decideProblems(): a pool no host can serve and a VIP held only off its pool's hosts, after power", () => {
  const status = model({
    vips: [
      vip("192.0.2.10", { services: ["shop/web"], pool: "racks", hosts: ["cp-1"] }),
      vip("192.0.2.11", { services: ["shop/api"], pool: "racks", hosts: ["w-1"] }),
    ],
    power: [{
      machine: "w-2",
      state: "unknown",
      since: undefined,
      answered: undefined,
      detail: "no answer",
    }],
    servingHosts: [
      {
        pool: "racks",
        announce: "vrrp",
        selection: "served_by",
        announced: true,
        hosts: [{ host: "w-1", state: "node-not-ready", node: "False" }],
      },
      { pool: "quiet", announce: "bgp", selection: "default", announced: false, hosts: [] },
    ],
  });
  const decided = decideProblems(status, FACTS);
  assert.deepEqual(decided.problems, [
    "machine w-2: power unknown (no answer)",
    "pool racks: no machine can serve it (w-1 (Node not Ready))",
    "VIP 192.0.2.10 (shop/web) of pool racks is served by cp-1, none of which serves the pool " +
    "(no machine can now)",
  ]);
});
