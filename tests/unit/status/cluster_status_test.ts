import assert from "node:assert/strict";
import { formatAge } from "../../../src/status/ages.ts";
import {
  bgpReport,
  heartbeatLease,
  lbService,
  leaderLease,
  NOW,
  report,
  statusOf,
  WATCHED_MS,
} from "./_leases.ts";

const ALL = ["10.0.0.150", "10.0.0.151"];
const POOLS = [{ pool: "lan", family: "IPv4" as const, total: 10, used: 2 }];

Deno.test("buildClusterStatus(): a healthy cluster has every VIP on one host and no problem", () => {
  const status = statusOf({
    services: [
      lbService("shop", "web", ["10.0.0.150"]),
      lbService("shop", "api", ["10.0.0.151"]),
      lbService("shop", "api-udp", ["10.0.0.151"]),
      { metadata: { name: "c", namespace: "x" }, spec: { type: "ClusterIP" } },
    ],
    leases: [
      heartbeatLease("cp-1", report("cp-1", ["10.0.0.150"], { all: ALL, pools: POOLS })),
      heartbeatLease("cp-2", report("cp-2", ["10.0.0.151"], { all: ALL }), 3000),
      leaderLease("cp-1_abc"),
    ],
    leaderLease: leaderLease("cp-1_abc"),
    nowMs: NOW,
  });
  assert.deepEqual(status.problems, []);
  assert.equal(status.leader.identity, "cp-1_abc");
  assert.deepEqual(status.vips.map((v) => [v.vip, v.services, v.pool, v.hosts]), [
    ["10.0.0.150", ["shop/web"], "lan", ["cp-1"]],
    ["10.0.0.151", ["shop/api", "shop/api-udp"], "lan", ["cp-2"]],
  ]);
  assert.deepEqual(status.vips[0]!.states, [
    { host: "cp-1", instance: "keelson_v4_g0", state: "holding" },
    { host: "cp-2", instance: "keelson_v4_g0", state: "standby" },
  ]);
  assert.equal(status.vips[0]!.since, "2026-01-01T11:58:00.000Z");
  assert.deepEqual(status.hosts.map((h) => [h.host, h.ageMs, h.silent, h.vipsServed]), [
    ["cp-1", 1000, false, 1],
    ["cp-2", 3000, false, 1],
  ]);
  assert.deepEqual(status.pools, [{ ...POOLS[0], full: false }]);
});

Deno.test("buildClusterStatus(): no host, two hosts, a silent host, a failed reload, a full pool, no leader", () => {
  const status = statusOf({
    services: [
      lbService("shop", "web", ["10.0.0.150"]),
      lbService("shop", "api", ["10.0.0.151"]),
    ],
    leases: [
      heartbeatLease(
        "cp-1",
        report("cp-1", ["10.0.0.151"], {
          all: ALL,
          reloadOk: false,
          pools: [{ pool: "lan", family: "IPv4", total: 10, used: 10 }],
        }),
      ),
      heartbeatLease("cp-2", report("cp-2", ["10.0.0.151"], { all: ALL })),
      // silent: its claim on 10.0.0.150 no longer counts
      heartbeatLease("cp-3", report("cp-3", ["10.0.0.150"], { all: ALL }), 20_000),
    ],
    leaderLease: leaderLease("cp-1_abc", 60_000),
    nowMs: NOW,
  });
  assert.equal(status.vips[0]!.problem, "unknown");
  assert.deepEqual(status.vips[0]!.lastSeenOn, ["cp-3"]);
  assert.equal(status.vips[1]!.problem, "split-brain");
  assert.deepEqual(status.vips[1]!.hosts, ["cp-1", "cp-2"]);
  assert.equal(status.vips[1]!.since, undefined);
  assert.equal(status.hosts[2]!.silent, true);
  assert.equal(status.leader.expired, true);
  assert.deepEqual(status.problems, [
    "no leader: cp-1_abc stopped renewing the Lease",
    "host cp-1: the last configuration reload failed",
    "host cp-3 is silent: its heartbeat did not change in the 20s watched (lease 15s; its last " +
    "renewal says 20s ago, by its own clock) (if it was removed from the " +
    "inventory: kubectl -n kube-system delete lease keelson-host-cp-3; --config tells retired " +
    "hosts apart)",
    "VIP 10.0.0.150 (shop/web) was last reported on cp-3, which went silent: whether it is served is unknown",
    "VIP 10.0.0.151 (shop/api) is served by 2 hosts (split brain): cp-1, cp-2",
    "pool lan (IPv4) is 100% used (10 of 10)",
  ]);
});

Deno.test("buildClusterStatus(): a VIP no host lists is served by no host", () => {
  const status = statusOf({
    services: [lbService("shop", "web", ["10.0.0.150"])],
    leases: [heartbeatLease("cp-1", report("cp-1", [], { all: ["10.0.0.150"] }))],
    leaderLease: leaderLease("cp-1_abc"),
    nowMs: NOW,
  });
  assert.equal(status.vips[0]!.problem, "no-host");
  assert.deepEqual(status.problems, ["VIP 10.0.0.150 (shop/web) is served by no host"]);
});

Deno.test("buildClusterStatus(): nothing to judge without any heartbeat, and no leader Lease is a problem", () => {
  const status = statusOf({
    services: [lbService("shop", "web", ["10.0.0.150"])],
    leases: [],
    leaderLease: undefined,
    nowMs: NOW,
  });
  assert.equal(status.vips[0]!.problem, undefined);
  assert.deepEqual(status.problems, ["no leader: the leader-election Lease has no holder"]);
});

Deno.test("formatAge() prints durations for people", () => {
  assert.deepEqual(
    [850, 12_000, 185_000, 7_620_000, 273_600_000].map(formatAge),
    ["850ms", "12s", "3m05s", "2h07m", "3d04h"],
  );
});

Deno.test("buildClusterStatus(): hosts without keepalived report nothing, so no VIP is judged", () => {
  const status = statusOf({
    services: [lbService("shop", "web", ["10.0.0.150"])],
    leases: [heartbeatLease("cp-1", report("cp-1", [], { all: [] }))],
    leaderLease: leaderLease("cp-1_abc"),
    nowMs: NOW,
  });
  assert.equal(status.vips[0]!.problem, undefined);
  assert.deepEqual(status.problems, []);
});

Deno.test("buildClusterStatus(): a BGP VIP announced by every healthy host is served (ECMP), a host with every session down is a problem", () => {
  const bgp = (established: boolean) => [
    { peer: "tor-a", established, routes: ["10.0.30.10/32", "10.244.1.0/24"] },
    { peer: "tor-b", established, routes: ["10.0.30.10/32"] },
  ];
  const status = statusOf({
    services: [lbService("shop", "web", ["10.0.30.10"], "bgp")],
    leases: [
      heartbeatLease("cp-1", { ...report("cp-1", []), bgp: bgp(true) }),
      heartbeatLease("cp-2", { ...report("cp-2", []), bgp: bgp(true) }),
      heartbeatLease("cp-3", { ...report("cp-3", []), bgp: bgp(false) }),
    ],
    leaderLease: leaderLease("cp-1_abc"),
    nowMs: NOW,
  });
  assert.deepEqual(status.vips.map((v) => [v.vip, v.hosts, v.bgpHosts, v.problem]), [
    ["10.0.30.10", [], ["cp-1", "cp-2"], undefined],
  ]);
  assert.deepEqual(status.hosts.map((h) => [h.host, h.bgpDown, h.bgp?.map((p) => p.routes)]), [
    ["cp-1", false, [2, 1]],
    ["cp-2", false, [2, 1]],
    ["cp-3", true, [2, 1]],
  ]);
  assert.deepEqual(status.problems, ["host cp-3: every BGP session is down (tor-a, tor-b)"]);
});

Deno.test("buildClusterStatus(): a BGP VIP no host announces is served by no host", () => {
  const status = statusOf({
    services: [lbService("shop", "web", ["10.0.30.10"], "bgp")],
    leases: [
      heartbeatLease("cp-1", {
        ...report("cp-1", []),
        bgp: [{ peer: "tor-a", established: true, routes: [] }],
      }),
    ],
    leaderLease: leaderLease("cp-1_abc"),
    nowMs: NOW,
  });
  assert.deepEqual(status.vips.map((v) => [v.vip, v.problem]), [["10.0.30.10", "no-host"]]);
});

Deno.test("buildClusterStatus(): with the inventory, a silent host no longer in it is retired: listed apart, no problem, its VIPs not counted", () => {
  const input = {
    services: [lbService("shop", "web", ["10.0.0.150"]), lbService("shop", "api", ["10.0.0.151"])],
    leases: [
      heartbeatLease("cp-1", report("cp-1", ["10.0.0.150"], { all: ALL })),
      heartbeatLease("cp-2", report("cp-2", ["10.0.0.151"], { all: ALL })),
      // removed from the inventory; its last report still lists both VIPs
      heartbeatLease("cp-9", report("cp-9", ALL, { all: ALL }), 3 * 86_400_000),
    ],
    leaderLease: leaderLease("cp-1_abc"),
    nowMs: NOW,
  };
  const status = statusOf({ ...input, inventory: new Set(["cp-1", "cp-2"]) });
  assert.deepEqual(status.problems, []);
  assert.equal(status.inventoryKnown, true);
  assert.deepEqual(status.hosts.map((h) => h.host), ["cp-1", "cp-2"]);
  assert.deepEqual(status.retired, [{
    host: "cp-9",
    lastHeartbeat: "2025-12-29T12:00:00.000Z",
    ageMs: WATCHED_MS, // unchanged for as long as this reader watched (its claim: 3 days)
    cleanup: "kubectl -n kube-system delete lease keelson-host-cp-9",
  }]);
  assert.deepEqual(status.vips.map((v) => [v.vip, v.hosts, v.lastSeenOn, v.problem]), [
    ["10.0.0.150", ["cp-1"], [], undefined],
    ["10.0.0.151", ["cp-2"], [], undefined],
  ]);

  // without the inventory the same Lease is a silent host, with the way out in its problem line
  const blind = statusOf(input);
  assert.equal(blind.inventoryKnown, false);
  assert.deepEqual(blind.retired, []);
  assert.equal(blind.hosts.find((h) => h.host === "cp-9")?.silent, true);
  assert.match(blind.problems.join("\n"), /host cp-9 is silent: .*delete lease keelson-host-cp-9/);

  // a host of the inventory that went silent is still a problem, not retired
  const missing = statusOf({ ...input, inventory: new Set(["cp-1", "cp-2", "cp-9"]) });
  assert.deepEqual(missing.retired, []);
  assert.deepEqual(missing.problems, [
    "host cp-9 is silent: its heartbeat did not change in the 20s watched (lease 15s; its last " +
    "renewal says 3d00h ago, by its own clock)",
  ]);
});

Deno.test("buildClusterStatus(): a host removed from the inventory but still renewing counts (it may still hold VIPs)", () => {
  const status = statusOf({
    services: [lbService("shop", "web", ["10.0.0.150"])],
    leases: [
      heartbeatLease("cp-1", report("cp-1", ["10.0.0.150"])),
      heartbeatLease("cp-9", report("cp-9", ["10.0.0.150"])),
    ],
    leaderLease: leaderLease("cp-1_abc"),
    nowMs: NOW,
    inventory: new Set(["cp-1"]),
  });
  assert.deepEqual(status.retired, []);
  assert.equal(status.vips[0]!.problem, "split-brain");
});

Deno.test("buildClusterStatus(): a host whose keepalived file was written while keepalived was not running is a problem, with its instances unknown", () => {
  const down = report("cp-2", [], { all: ALL });
  down.announcers = [{ name: "keepalived", apply: "not_running" }];
  down.announcements = down.announcements.map((i) => ({ ...i, state: "unknown" }));
  const status = statusOf({
    services: [lbService("shop", "web", ["10.0.0.150"]), lbService("shop", "api", ["10.0.0.151"])],
    leases: [
      heartbeatLease("cp-1", report("cp-1", ALL, { all: ALL })),
      heartbeatLease("cp-2", down),
    ],
    leaderLease: leaderLease("cp-1_abc"),
    nowMs: NOW,
  });
  assert.deepEqual(status.problems, [
    "host cp-2: keepalived is not running (its last config was written, not loaded)",
  ]);
  assert.deepEqual(status.vips[0]!.states, [
    { host: "cp-1", instance: "keelson_v4_g0", state: "holding" },
    { host: "cp-2", instance: "keelson_v4_g0", state: "unknown" },
  ]);
});

Deno.test("buildClusterStatus(): VIPs are listed in address order, IPv6 numerically like IPv4", () => {
  const status = statusOf({
    services: [
      lbService("shop", "b", ["2001:db8::10"]),
      lbService("shop", "a", ["2001:db8::9"]),
      lbService("shop", "c", ["10.0.0.10"]),
      lbService("shop", "d", ["10.0.0.9"]),
    ],
    leases: [],
    leaderLease: leaderLease("cp-1_abc"),
    nowMs: NOW,
  });
  assert.deepEqual(status.vips.map((v) => v.vip), [
    "10.0.0.9",
    "10.0.0.10",
    "2001:db8::9",
    "2001:db8::10",
  ]);
});

Deno.test("buildClusterStatus(): a BGP VIP two hosts hold at once is served (anycast), no split brain, each host's state shown; two VRRP holders still are one", () => {
  const status = statusOf({
    services: [
      lbService("shop", "web", ["10.0.30.10"], "bgp"),
      lbService("shop", "api", ["10.0.0.150"]),
    ],
    leases: [
      heartbeatLease("cp-1", bgpReport("cp-1", ["10.0.30.10"])),
      heartbeatLease("cp-2", bgpReport("cp-2", ["10.0.30.10"])),
      heartbeatLease("cp-3", bgpReport("cp-3", ["10.0.30.10"], { established: false })),
      // VRRP: one master only, so two holders are a split brain
      heartbeatLease("cp-4", report("cp-4", ["10.0.0.150"])),
      heartbeatLease("cp-5", report("cp-5", ["10.0.0.150"])),
    ],
    leaderLease: leaderLease("cp-1_abc"),
    nowMs: NOW,
  });
  const row = (vip: string) => status.vips.find((v) => v.vip === vip)!;
  assert.deepEqual(row("10.0.30.10").states, [
    { host: "cp-1", instance: "keelson_vips4_p0", state: "holding" },
    { host: "cp-2", instance: "keelson_vips4_p0", state: "holding" },
    { host: "cp-3", instance: "keelson_vips4_p0", state: "failed" },
  ]);
  assert.deepEqual(row("10.0.30.10").bgpHosts, ["cp-1", "cp-2"]);
  assert.equal(row("10.0.30.10").problem, undefined);
  assert.equal(row("10.0.0.150").problem, "split-brain");
  assert.deepEqual(status.problems, [
    "host cp-3: every BGP session is down (tor-a)",
    "VIP 10.0.0.150 (shop/api) is served by 2 hosts (split brain): cp-4, cp-5",
  ]);
});

Deno.test("buildClusterStatus(): the control-plane VIP held over BGP by two hosts is no problem, with or without the inventory", () => {
  const cp = { name: "keelson_cp4", serves: "control-plane" as const };
  const input = {
    services: [],
    leases: [
      heartbeatLease("cp-1", bgpReport("cp-1", ["10.0.0.10"], cp)),
      heartbeatLease("cp-2", bgpReport("cp-2", ["10.0.0.10"], cp)),
    ],
    leaderLease: leaderLease("cp-1_abc"),
    nowMs: NOW,
  };
  for (const known of [undefined, new Set(["10.0.0.10"])]) {
    const status = statusOf({ ...input, ...(known ? { controlPlaneVips: known } : {}) });
    assert.deepEqual(status.problems, [], known ? "with the inventory" : "without it");
    assert.deepEqual(
      status.vips.map((v) => [v.vip, v.bgpHosts, v.states.map((s) => s.state), v.problem]),
      [["10.0.0.10", ["cp-1", "cp-2"], ["holding", "holding"], undefined]],
    );
  }
});

Deno.test("buildClusterStatus(): a BGP VIP whose every host failed is served by no host, its states saying why", () => {
  const status = statusOf({
    services: [lbService("shop", "web", ["10.0.30.10"], "bgp")],
    leases: [
      heartbeatLease("cp-1", bgpReport("cp-1", ["10.0.30.10"], { established: false })),
      heartbeatLease("cp-2", bgpReport("cp-2", ["10.0.30.10"], { established: false })),
    ],
    leaderLease: leaderLease("cp-1_abc"),
    nowMs: NOW,
  });
  assert.deepEqual(
    status.vips.map((v) => [v.vip, v.states.map((s) => `${s.host}=${s.state}`), v.problem]),
    [["10.0.30.10", ["cp-1=failed", "cp-2=failed"], "no-host"]],
  );
});
