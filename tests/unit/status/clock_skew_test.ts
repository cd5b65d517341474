/**
 * A heartbeat's (and the leader Lease's) freshness is judged by when this reader saw the record
 * change, never by the writer's clock: a host whose clock runs 9 minutes fast and died is silent
 * after its lease (not "0 ms ago", its VIP no split brain, no VIPSplitBrain Event); a live host
 * 20 s slow is fresh; a leader Lease renewed "tomorrow" is not alive unless seen renewing. The
 * same for the pod routes judged from the heartbeats.
 *
 * On the code before this change the same Leases gave: the dead fast host "0ms ago" and SPLIT
 * BRAIN with a VIPSplitBrain Warning; the slow host SILENT and its VIP unknown; the leader alive
 * (see tests/integration/status_clock_skew_test.ts, which runs the command both ways).
 */
import assert from "node:assert/strict";
import type { V1Lease, V1Service } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { VipHostController } from "../../../src/controllers/vip_hosts/vip_host_controller.ts";
import { buildClusterStatus } from "../../../src/status/cluster_status.ts";
import { formatStatusText } from "../../../src/status/format_status.ts";
import { observeHeartbeats } from "../../../src/status/heartbeats.ts";
import { RecordObserver } from "../../../src/status/observed_freshness.ts";
import { reportedRoutes } from "../../../providers/baremetal/bird/reported_routes.ts";
import { FakeEventRecorder, FakeInformer } from "../_fakes/fake_cluster.ts";
import { bgpConfig } from "../providers/baremetal/bird/_inventory.ts";
import { lbService, report } from "./_leases.ts";
import { type HostReport } from "../../../src/status/host_report.ts";
import { encodeHostReport } from "../../../src/status/encode_host_report.ts";

const MINUTE = 60_000;
const VIP = "10.0.0.150";

/** A small world: a true wall clock, a reader's monotonic clock, Leases written by hosts. */
function world() {
  let wall = Date.parse("2026-01-01T12:00:00Z");
  let mono = 5_000_000;
  const leases = new Map<string, V1Lease>();
  const observer = new RecordObserver(() => mono);
  return {
    observer,
    now: () => mono,
    wall: () => wall,
    advance(ms: number) {
      wall += ms;
      mono += ms;
    },
    /** `host` writes its heartbeat now, its clock `skewMs` off the true time. */
    heartbeat(host: string, rep: HostReport, skewMs: number) {
      leases.set(host, {
        metadata: {
          name: `keelson-host-${host}`,
          namespace: "kube-system",
          annotations: { "keelson.io/data-plane": encodeHostReport(rep) },
        },
        spec: {
          holderIdentity: host,
          leaseDurationSeconds: 15,
          renewTime: new Date(wall + skewMs).toISOString() as unknown as Date,
        },
      });
    },
    leases: () => [...leases.values()],
  };
}

function leader(renewTime: string): V1Lease {
  return {
    metadata: { name: "keelson", namespace: "kube-system" },
    spec: {
      holderIdentity: "cp-1_abc",
      leaseDurationSeconds: 15,
      renewTime: renewTime as unknown as Date,
    },
  };
}

const services: V1Service[] = [lbService("shop", "web", [VIP])];

Deno.test("status: a host 9 minutes fast that died is silent after its lease, its VIP served by the host that took it", () => {
  const w = world();
  const status = (leaderLease?: V1Lease) =>
    buildClusterStatus({
      services,
      leases: w.leases(),
      leaderLease,
      observer: w.observer,
      nowMs: w.wall(),
    });
  // cp-1 (9 min fast) serves the VIP and renews; cp-2 (right clock) is backup
  for (let i = 0; i < 3; i++) {
    w.heartbeat("cp-1", report("cp-1", [VIP], { all: [VIP] }), 9 * MINUTE);
    w.heartbeat("cp-2", report("cp-2", [], { all: [VIP] }), 0);
    status();
    w.advance(5000);
  }
  // cp-1 dies; a second later cp-2 is MASTER and says so at once
  w.advance(1000);
  w.heartbeat("cp-2", report("cp-2", [VIP], { all: [VIP] }), 0);
  const takeover = status();
  assert.deepEqual(takeover.vips.map((v) => [v.hosts, v.superseded, v.problem]), [
    [["cp-2"], ["cp-1"], undefined],
  ]);
  // cp-2 renews every 5 s; after cp-1's lease (by this reader's clock) it is silent
  for (let i = 0; i < 4; i++) {
    w.advance(5000);
    w.heartbeat("cp-2", report("cp-2", [VIP], { all: [VIP] }), 0);
    status();
  }
  const later = status();
  const cp1 = later.hosts.find((h) => h.host === "cp-1")!;
  assert.equal(cp1.freshness, "silent");
  assert.ok(cp1.ageMs >= 15_000, String(cp1.ageMs));
  assert.deepEqual(later.vips.map((v) => [v.vip, v.hosts, v.problem]), [[
    VIP,
    ["cp-2"],
    undefined,
  ]]);
  assert.ok(!later.problems.some((p) => p.includes("split brain")), later.problems.join("\n"));
  assert.match(later.problems.join("\n"), /host cp-1 is silent: no heartbeat for 2[0-9]s/);
  const text = formatStatusText(later, { color: false });
  assert.match(text, /cp-1 +SILENT 2[0-9]s ago/);
  assert.doesNotMatch(text, /SPLIT BRAIN/);
  assert.doesNotMatch(text, /cp-1 +[0-9]+ms ago/);
});

Deno.test("status: a live host 20 s slow is fresh and serves its VIP", () => {
  const w = world();
  let last;
  for (let i = 0; i < 5; i++) {
    w.heartbeat("cp-2", report("cp-2", [VIP], { all: [VIP] }), -20_000);
    last = buildClusterStatus({
      services,
      leases: w.leases(),
      leaderLease: undefined,
      observer: w.observer,
      nowMs: w.wall(),
    });
    w.advance(5000);
  }
  const cp2 = last!.hosts[0]!;
  assert.deepEqual([cp2.host, cp2.freshness, cp2.silent], ["cp-2", "fresh", false]);
  assert.deepEqual(last!.vips.map((v) => [v.hosts, v.problem]), [[["cp-2"], undefined]]);
  assert.ok(!last!.problems.some((p) => p.includes("cp-2")), last!.problems.join("\n"));
});

Deno.test("status: a leader Lease renewed 'tomorrow' is not alive unless seen renewing", () => {
  const w = world();
  const tomorrow = new Date(w.wall() + 24 * 60 * MINUTE).toISOString();
  const read = (lease: V1Lease) =>
    buildClusterStatus({
      services: [],
      leases: [],
      leaderLease: lease,
      observer: w.observer,
      nowMs: w.wall(),
    });
  // first read: not judged, and not shown alive
  const first = read(leader(tomorrow));
  assert.equal(first.leader.freshness, "unobserved");
  assert.match(formatStatusText(first, { color: false }), /Leader: cp-1_abc \(unconfirmed/);
  // unchanged for its lease duration: nobody leads
  w.advance(16_000);
  const stale = read(leader(tomorrow));
  assert.equal(stale.leader.expired, true);
  assert.deepEqual(stale.problems, ["no leader: cp-1_abc stopped renewing the Lease"]);
  // a leader whose clock says "tomorrow" but which is seen renewing is alive
  w.advance(2000);
  const renewing = read(leader(new Date(w.wall() + 24 * 60 * MINUTE).toISOString()));
  assert.deepEqual([renewing.leader.freshness, renewing.leader.expired], ["fresh", false]);
  assert.deepEqual(renewing.problems, []);
});

Deno.test("leader: a dead host 9 minutes fast brings no VIPSplitBrain Event; a live host 20 s slow no VIPNotServed", async () => {
  const w = world();
  const leases = new FakeInformer<V1Lease>();
  const serviceCache = new FakeInformer<V1Service>();
  serviceCache.upsert(lbService("shop", "web", [VIP]));
  serviceCache.upsert(lbService("shop", "api", ["10.0.0.151"]));
  const events = new FakeEventRecorder();
  const registry = new Registry();
  const controller = new VipHostController({
    services: serviceCache,
    leases,
    events,
    handles: () => true,
    registry,
    now: w.now,
  }, { graceMs: 3000 });
  const sync = () => {
    for (const lease of w.leases()) leases.upsert(lease);
    controller.evaluate();
  };
  const all = [VIP, "10.0.0.151"];
  // cp-1 (9 min fast) serves .150, cp-3 (20 s slow) serves .151, cp-2 (right clock) backup
  for (let i = 0; i < 3; i++) {
    w.heartbeat("cp-1", report("cp-1", [VIP], { all }), 9 * MINUTE);
    w.heartbeat("cp-2", report("cp-2", [], { all }), 0);
    w.heartbeat("cp-3", report("cp-3", ["10.0.0.151"], { all }), -20_000);
    sync();
    w.advance(5000);
  }
  // cp-1 dies; cp-2 takes .150 a second later; the others keep renewing every 5 s for 30 s
  w.advance(1000);
  w.heartbeat("cp-2", report("cp-2", [VIP], { all }), 0);
  sync();
  for (let i = 0; i < 30; i++) {
    w.advance(1000);
    if (i % 5 === 4) {
      w.heartbeat("cp-2", report("cp-2", [VIP], { all }), 0);
      w.heartbeat("cp-3", report("cp-3", ["10.0.0.151"], { all }), -20_000);
    }
    sync();
  }
  assert.deepEqual(events.events.map((e) => [e.object, e.reason, e.message]), [
    ["Service/shop/web", "VIPHostChanged", `VIP ${VIP} now served by cp-2`],
  ]);
  const metrics = await registry.metrics();
  assert.match(metrics, /keelson_vip_serving_hosts\{vip="10.0.0.150",service="shop\/web"\} 1\n/);
  assert.match(metrics, /keelson_vip_serving_hosts\{vip="10.0.0.151",service="shop\/api"\} 1\n/);
  // by the leader's watch: cp-1 unchanged since its last renewal 36 s ago, cp-3 renewed just now
  assert.match(metrics, /keelson_host_heartbeat_age_seconds\{host="cp-1"\} 36\n/);
  assert.match(metrics, /keelson_host_heartbeat_age_seconds\{host="cp-3"\} [0-5]\n/);
});

Deno.test("pod routes: a dead host 9 minutes fast stops counting after its lease; a live host 20 s slow counts", async () => {
  const config = await bgpConfig();
  const w = world();
  const node = {
    metadata: { name: "w-1" },
    spec: { podCIDRs: ["10.244.1.0/24"] },
    status: { addresses: [{ type: "InternalIP", address: "10.0.0.21" }] },
  };
  const peer = config.bgp!.peers.find((p) => p.pod_cidrs)!.name;
  const bgp = [{ peer, established: true, routes: ["10.244.1.0/24"] }];
  const routes = () =>
    reportedRoutes({
      config,
      nodes: [node],
      heartbeats: observeHeartbeats(w.leases(), w.observer, true),
    }).map((r) => r.name);
  for (
    const [skew, renewing, routed] of [[9 * MINUTE, false, []], [-20_000, true, [
      "w-1/10.244.1.0/24",
    ]]] as const
  ) {
    w.heartbeat("cp-1", { ...report("cp-1", []), bgp }, skew);
    routes();
    w.advance(1000);
    w.heartbeat("cp-1", { ...report("cp-1", []), bgp }, skew);
    assert.deepEqual(routes(), ["w-1/10.244.1.0/24"]);
    for (let i = 0; i < 4; i++) {
      w.advance(5000);
      if (renewing) w.heartbeat("cp-1", { ...report("cp-1", []), bgp }, skew);
      routes();
    }
    assert.deepEqual(routes(), routed, `skew ${skew}`);
  }
});

Deno.test("leader: a new leader finding a dead host 9 minutes fast that still lists a VIP another host serves says nothing", async () => {
  const w = world();
  // cp-1 (9 min fast) died listing the VIP; cp-2 took it; then a new leader starts
  w.heartbeat("cp-1", report("cp-1", [VIP], { all: [VIP] }), 9 * MINUTE);
  w.heartbeat("cp-2", report("cp-2", [VIP], { all: [VIP] }), 0);
  const leases = new FakeInformer<V1Lease>();
  const serviceCache = new FakeInformer<V1Service>();
  serviceCache.upsert(lbService("shop", "web", [VIP]));
  const events = new FakeEventRecorder();
  const registry = new Registry();
  const controller = new VipHostController({
    services: serviceCache,
    leases,
    events,
    handles: () => true,
    registry,
    now: w.now,
  }, { graceMs: 3000 });
  const hosts: string[][] = [];
  for (let i = 0; i < 30; i++) {
    if (i % 5 === 2) w.heartbeat("cp-2", report("cp-2", [VIP], { all: [VIP] }), 0);
    for (const lease of w.leases()) leases.upsert(lease);
    hosts.push(...controller.evaluate().map((o) => o.hosts));
    w.advance(1000);
  }
  assert.deepEqual(events.events, []);
  assert.ok(hosts.every((h) => h.length <= 1), JSON.stringify(hosts));
  assert.deepEqual(hosts.at(-1), ["cp-2"]);
  assert.match(
    await registry.metrics(),
    /keelson_vip_serving_hosts\{vip="10.0.0.150",service="shop\/web"\} 1\n/,
  );
});
