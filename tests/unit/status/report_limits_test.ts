/**
 * One set of heartbeat-report bounds for the writer and every reader: at the bounds a report is
 * cut (with counts of what it left out), never refused, and the host stays visible. The cases of
 * the trust-boundary campaign: 2,700 VIPs (200,963 bytes before: over the readers' 196,608),
 * 4 peers × 3,000 pod routes (over it too), 302 pools and 4,097 VIPs (the writer threw, and the
 * host's heartbeat was never renewed again). Each fails on the code before this change: there the
 * first two encoded to a text `decodeHostReport` refused, the last two made `encodeHostReport`
 * throw.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import type { V1Lease } from "@kubernetes/client-node";
import { HostHeartbeat } from "../../../src/agent/host_heartbeat.ts";
import type { LeaseApi } from "../../../src/kube/lease_api.ts";
import {
  decodeHostReport,
  type HostReport,
  MAX_REPORT_BYTES,
} from "../../../src/status/host_report.ts";
import { encodeHostReport } from "../../../src/status/encode_host_report.ts";
import { previousReportSchema } from "./_previous_report_schema.ts";
import { REPORT_LIST_LIMITS } from "../../../src/status/host_report_limits.ts";
import { canonicalIp } from "../../../src/net/ip.ts";
import type { V1Service } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { VipHostController } from "../../../src/controllers/vip_hosts/vip_host_controller.ts";
import { formatStatusText } from "../../../src/status/format_status.ts";
import { reportedRoutes } from "../../../providers/baremetal/bird/reported_routes.ts";
import { FakeEventRecorder, FakeInformer } from "../_fakes/fake_cluster.ts";
import { bgpConfig } from "../providers/baremetal/bird/_inventory.ts";
import { buildBirdModel } from "../../../providers/baremetal/bird/model.ts";
import { bgpAnnouncements } from "../../../providers/baremetal/bird/bgp_announcements.ts";
import { bgpPeerReports } from "../../../providers/baremetal/bird/bgp_report.ts";
import { hostReport as agentReport } from "../../../src/agent/heartbeat.ts";
import {
  heartbeatLease,
  judged,
  lbService,
  leaderLease,
  NOW,
  report,
  statusOf,
} from "./_leases.ts";

const SINCE = "2026-01-01T11:58:00.000Z";

/** The `n`-th address of 10.128.0.0/9 (or of fd00::/64). */
function address(n: number, v6 = false): string {
  return canonicalIp(
    v6
      ? `fd00::${(n >> 16).toString(16)}:${(n & 0xffff).toString(16)}`
      : `10.${128 + (n >> 16)}.${(n >> 8) & 255}.${n & 255}`,
  )!;
}

/** What a keepalived host serving `count` VIPs publishes: 20 VIPs per instance, as rendered. */
function hostReport(
  count: number,
  options: { pools?: number; peers?: number; routes?: number; v6?: boolean } = {},
): HostReport {
  const vips = Array.from({ length: count }, (_, i) => address(i, options.v6));
  const instances = [];
  for (let i = 0; i * 20 < count; i++) {
    instances.push({
      announcer: "keepalived",
      name: `keelson_v4_g${i}`,
      state: "holding" as const,
      observed: "daemon" as const,
      since: SINCE,
      vips: vips.slice(i * 20, i * 20 + 20),
    });
  }
  return {
    v: 1,
    host: "cp-1",
    version: "0.1.0",
    announcements: instances,
    vips: vips.map((ip) => ({ ip, since: SINCE })),
    reload: { ok: true, at: SINCE },
    announcers: [{ name: "keepalived", apply: "success" as const }],
    pools: Array.from({ length: options.pools ?? 1 }, (_, i) => ({
      pool: `pool-${i}`,
      family: "IPv4" as const,
      total: 65536,
      used: 100,
    })),
    ...(options.peers
      ? {
        bgp: Array.from({ length: options.peers }, (_, p) => ({
          peer: `tor-${p}`,
          established: true,
          routes: Array.from({ length: options.routes ?? 0 }, (_, r) =>
            `10.${128 + (r >> 8)}.${r & 255}.0/24`)
            .sort(),
        })),
      }
      : {}),
  };
}

/** The writer's text, checked the way every reader checks it, older readers included. */
function publish(report: HostReport): HostReport {
  const text = encodeHostReport(report);
  assert.ok(text.length <= MAX_REPORT_BYTES, `${text.length} bytes`);
  const decoded = decodeHostReport(text);
  assert.ok(!("error" in decoded), "error" in decoded ? decoded.error : "");
  for (const keepalivedRequired of [false, true]) {
    const older = previousReportSchema({ keepalivedRequired }).safeParse(JSON.parse(text));
    assert.ok(older.success, JSON.stringify(older.error?.issues[0]));
  }
  return decoded;
}

Deno.test("2,700 VIPs: the report is cut to the bound, says what it left out, and every reader accepts it", () => {
  const full = hostReport(2700);
  assert.ok(JSON.stringify(full).length > MAX_REPORT_BYTES); // 200,963 bytes: refused before
  const published = publish(full);
  assert.equal(published.host, "cp-1");
  const o = published.omitted!;
  assert.ok(o, "omitted counts");
  // nothing is lost without a count: kept + left out = the whole
  assert.equal(published.pools.length + (o.pools ?? 0), 1);
  assert.equal(
    published.announcements.reduce((n, i) => n + i.vips.length, 0) + (o.instance_vips ?? 0),
    2700,
  );
  assert.equal(published.vips.length + (o.vips ?? 0), 2700);
  assert.equal(published.announcements.length + (o.instances ?? 0), 135);
  // the host's own VIPs go last: all of them are still listed here
  assert.equal(published.vips.length, 2700);
});

Deno.test("4,097 VIPs and 302 pools: cut to the bounds instead of refused", () => {
  const vips = publish(hostReport(4097));
  assert.ok(vips.vips.length <= REPORT_LIST_LIMITS.vips);
  assert.equal(vips.vips.length + (vips.omitted?.vips ?? 0), 4097);
  const pools = publish(hostReport(10, { pools: 302 }));
  assert.equal(pools.pools.length, REPORT_LIST_LIMITS.pools);
  assert.equal(pools.omitted?.pools, 302 - REPORT_LIST_LIMITS.pools);
  assert.equal(pools.vips.length, 10);
});

Deno.test("4 peers × 3,000 pod routes: the longest lists are cut, every peer stays", () => {
  const full = hostReport(0, { peers: 4, routes: 3000 });
  assert.ok(JSON.stringify(full).length > MAX_REPORT_BYTES);
  const published = publish(full);
  assert.deepEqual(published.bgp!.map((p) => p.peer), ["tor-0", "tor-1", "tor-2", "tor-3"]);
  const kept = published.bgp!.reduce((n, p) => n + p.routes.length, 0);
  assert.equal(kept + published.omitted!.routes!, 12_000);
  // cut evenly: no peer loses much more than another
  const lengths = published.bgp!.map((p) => p.routes.length);
  assert.ok(Math.max(...lengths) - Math.min(...lengths) <= 1, String(lengths));
});

Deno.test("a BIRD host with 4,000 VIPs over two peers: its share fits, the announcement and every peer stay", async () => {
  // the pool holds 4,096 addresses; cp-1 peers with tor-a and rr-1, both taking the pool
  const config = await bgpConfig((t) =>
    t.replace('hosts = ["cp-3"]\n', "").replace("198.51.100.0/28", "198.51.96.0/20")
  );
  const vips = Array.from(
    { length: 4000 },
    (_, i) => `198.51.${96 + ((i + 1) >> 8)}.${(i + 1) & 255}`,
  );
  const model = buildBirdModel({ config, host: "cp-1", serviceVips: vips });
  if ("error" in model) throw new Error(model.error);
  assert.equal(model.statics[0]!.routes.length, 4000);
  const sessions = { reachable: true, established: () => true };
  const share = {
    instances: bgpAnnouncements({
      model,
      sessions,
      announcer: "bird",
      previous: new Map(),
      now: SINCE,
    }).instances,
    vips: [],
    sessions: bgpPeerReports(model, sessions),
  };
  const full = agentReport({
    host: "cp-1",
    dataPlane: {
      snapshot: () => share,
      subscribe: () => () => {},
      applies: () => [{ announcer: "bird", result: "success" }],
    },
    reloads: { lastReloadSucceeded: () => true, lastSuccessAt: () => new Date(SINCE) },
  });
  assert.ok(JSON.stringify(full).length > MAX_REPORT_BYTES, `${JSON.stringify(full).length}`);
  const published = publish(full);
  assert.deepEqual(
    published.announcements.map((a) => [a.announcer, a.name, a.state, a.serves]),
    [["bird", "keelson_vips4_p1", "holding", "services"]],
  );
  assert.deepEqual(published.bgp!.map((p) => p.peer), ["rr-1", "tor-a"]);
  // nothing is lost without a count
  const o = published.omitted ?? {};
  assert.equal(published.announcements[0]!.vips.length + (o.instance_vips ?? 0), 4000);
  assert.equal(published.bgp!.reduce((n, p) => n + p.routes.length, 0) + (o.routes ?? 0), 8000);
  // the announcement's list of VIPs goes before the routes readers count BGP hosts from
  assert.ok(published.bgp!.every((p) => p.routes.length > 0));
});

Deno.test("a report within the bounds is published whole, without omitted counts", () => {
  for (const report of [hostReport(1000), hostReport(5, { peers: 2, routes: 100 })]) {
    assert.deepEqual(publish(report), report);
  }
});

/** Leases in memory (create and replace), as the API server keeps them. */
class MemoryLeases implements LeaseApi {
  store = new Map<string, V1Lease>();
  #rv = 0;
  read(namespace: string, name: string) {
    return Promise.resolve(structuredClone(this.store.get(`${namespace}/${name}`)));
  }
  create(lease: V1Lease) {
    return this.replace(lease);
  }
  replace(lease: V1Lease) {
    const stored = structuredClone(lease);
    stored.metadata!.resourceVersion = String(++this.#rv);
    this.store.set(`${lease.metadata!.namespace}/${lease.metadata!.name}`, stored);
    return Promise.resolve(structuredClone(stored));
  }
}

Deno.test("a host at the bounds keeps renewing its heartbeat", async () => {
  const leases = new MemoryLeases();
  let now = Date.parse("2026-01-01T12:00:00Z");
  const hb = new HostHeartbeat({
    leases,
    host: "cp-1",
    report: () => Promise.resolve(hostReport(4097, { pools: 302, peers: 4, routes: 3000 })),
    now: () => now,
  });
  for (let i = 0; i < 3; i++) {
    await hb.writeOnce();
    const lease = leases.store.get("kube-system/keelson-host-cp-1")!;
    assert.equal(new Date(lease.spec!.renewTime!).getTime(), now);
    const decoded = decodeHostReport(lease.metadata!.annotations!["keelson.io/data-plane"]!);
    assert.ok(!("error" in decoded), "error" in decoded ? decoded.error : "");
    now += 5000;
  }
});

Deno.test("property: every report the writer emits, every reader accepts; the cut loses nothing uncounted", () => {
  const ipv4 = fc.integer({ min: 0, max: 1 << 20 }).map((n) => address(n));
  const ipv6 = fc.integer({ min: 0, max: 1 << 30 }).map((n) => address(n, true));
  const ip = fc.oneof(ipv4, ipv6);
  const name = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/);
  const prefix = fc.tuple(fc.integer({ min: 0, max: 65535 }), fc.integer({ min: 8, max: 32 }))
    .map(([n, l]) => `10.${n >> 8}.${n & 255}.0/${Math.max(l, 24)}`);
  const big = <T>(arb: fc.Arbitrary<T>, max: number) =>
    fc.oneof(
      { weight: 3, arbitrary: fc.array(arb, { maxLength: 8 }) },
      { weight: 1, arbitrary: fc.integer({ min: 0, max }).map((n) => fc.sample(arb, n)) },
    );
  const report: fc.Arbitrary<HostReport> = fc.record({
    vips: big(ip, 6000),
    instances: fc.integer({ min: 0, max: 1200 }),
    perInstance: fc.integer({ min: 0, max: 30 }),
    pools: big(
      fc.record({
        pool: name,
        family: fc.constantFrom("IPv4" as const, "IPv6" as const),
        total: fc.integer({ min: 0, max: 2 ** 40 }),
        used: fc.integer({ min: 0, max: 2 ** 20 }),
      }, { noNullPrototype: true }),
      400,
    ),
    peers: fc.oneof(
      { weight: 4, arbitrary: fc.integer({ min: 0, max: 6 }) },
      { weight: 1, arbitrary: fc.integer({ min: 250, max: 270 }) },
    ),
    routes: fc.oneof(
      { weight: 3, arbitrary: fc.integer({ min: 0, max: 50 }) },
      { weight: 1, arbitrary: fc.integer({ min: 2000, max: 4000 }) },
    ),
    restart: fc.integer({ min: 0, max: 80 }),
  }, { noNullPrototype: true }).map((g) => {
    const unique = [...new Set(g.vips)];
    const routes = [...new Set(fc.sample(prefix, g.routes))].sort();
    return {
      v: 1 as const,
      host: "cp-1",
      version: "0.1.0",
      // keepalived's are repeated for older readers, another announcer's are not
      announcements: Array.from({ length: g.instances }, (_, i) => ({
        announcer: i % 3 === 2 ? "bird" : "keepalived",
        name: `keelson_v4_g${i}`,
        state: "standby" as const,
        observed: "addresses" as const,
        since: SINCE,
        vips: unique.slice(0, g.perInstance),
      })),
      vips: unique.map((v) => ({ ip: v, since: SINCE })),
      announcers: [],
      reload: {
        ok: true,
        ...(g.restart > 0
          ? { restart: Array.from({ length: g.restart }, (_, i) => `[bgp] socket ${i}`) }
          : {}),
      },
      pools: g.pools,
      ...(g.peers > 0
        ? {
          bgp: Array.from({ length: g.peers }, (_, p) => ({
            peer: `tor-${p}`,
            established: p % 2 === 0,
            routes,
          })),
        }
        : {}),
    };
  });
  let runs = 0;
  fc.assert(
    fc.property(report, (full) => {
      runs++;
      const published = publish(full);
      const o = published.omitted ?? {};
      const sum = (r: HostReport) => ({
        instances: r.announcements.length,
        instance_vips: r.announcements.reduce((n, i) => n + i.vips.length, 0),
        vips: r.vips.length,
        pools: r.pools.length,
        peers: r.bgp?.length ?? 0,
        routes: (r.bgp ?? []).reduce((n, p) => n + p.routes.length, 0),
        restart: r.reload.restart?.length ?? 0,
      });
      const whole = sum(full);
      const kept = sum(published);
      for (const key of Object.keys(whole) as (keyof typeof whole)[]) {
        assert.equal(kept[key] + (o[key] ?? 0), whole[key], key);
      }
      // kept entries are the first ones, unchanged
      assert.deepEqual(published.vips, full.vips.slice(0, published.vips.length));
      if (published.omitted === undefined) assert.deepEqual(published, full);
    }),
    { numRuns: 60, seed: 22 },
  );
  assert.equal(runs, 60);
});

Deno.test("readers: a VIP left out of a cut report is unknown, never unserved", () => {
  const full = hostReport(5000);
  const last = full.vips.at(-1)!.ip;
  const lease = heartbeatLease("cp-1", full);
  // keelson status
  const status = statusOf({
    services: [lbService("shop", "web", [last]), lbService("shop", "api", [full.vips[0]!.ip])],
    leases: [lease],
    leaderLease: leaderLease("cp-1_abc"),
    nowMs: NOW,
  });
  const rows = new Map(status.vips.map((v) => [v.vip, v]));
  assert.deepEqual(
    [rows.get(last)?.problem, rows.get(last)?.maybeOn],
    ["unknown", ["cp-1"]],
  );
  assert.deepEqual(rows.get(full.vips[0]!.ip)?.hosts, ["cp-1"]);
  assert.ok(
    !status.problems.some((p) => p.includes("served by no host")),
    status.problems.join("\n"),
  );
  const text = formatStatusText(status, { color: false });
  assert.match(text, /cp-1: report cut at its size limit, not listed: .*\d+ vips/);
  assert.match(text, /\(\+\d+ not listed\)/);
  // the leader: no VIPNotServed for it
  const leases = new FakeInformer<V1Lease>();
  const services = new FakeInformer<V1Service>();
  services.upsert(lbService("shop", "web", [last]));
  const events = new FakeEventRecorder();
  let now = 0;
  const controller = new VipHostController({
    services,
    leases,
    events,
    handles: () => true,
    registry: new Registry(),
    now: () => now,
  });
  controller.evaluate();
  for (let i = 0; i < 10; i++) {
    leases.upsert(heartbeatLease("cp-1", full, -i * 1000));
    controller.evaluate();
    now += 1000;
  }
  // (the fixture's other VIPs are held by no Service: AddressWithoutService, not this test's)
  assert.deepEqual(events.events.filter((e) => e.reason !== "AddressWithoutService"), []);
});

Deno.test("readers: pod routes beyond a cut report count for the host's Established eligible peers", async () => {
  const config = await bgpConfig();
  const peer = config.bgp!.peers.find((p) => p.pod_cidrs)!.name;
  // w-1 is an inventory machine: its route counts; the other 11,999 prefixes fill the report
  const cidr = "10.244.255.0/24";
  const nodes = [{
    metadata: { name: "w-1" },
    spec: { podCIDRs: [cidr] },
    status: { addresses: [{ type: "InternalIP", address: "10.0.0.21" }] },
  }];
  const filler = Array.from(
    { length: 11_999 },
    (_, i) => `10.${128 + (i >> 8)}.${i & 255}.0/24`,
  );
  const routes = [...filler, cidr].sort();
  const rep = { ...report("cp-1", []), bgp: [{ peer, established: true, routes }] };
  const published = decodeHostReport(encodeHostReport(rep)) as HostReport;
  assert.ok(published.omitted?.routes, "the report was cut");
  assert.ok(!published.bgp![0]!.routes.includes(cidr), "w-1's route is beyond the cut");
  assert.deepEqual(
    reportedRoutes({ config, nodes, heartbeats: judged([heartbeatLease("cp-1", rep)]) })
      .map((r) => r.destinationCIDR),
    [cidr],
  );
  // not Established: nothing is taken on trust
  const down = { ...rep, bgp: [{ peer, established: false, routes }] };
  assert.equal(
    reportedRoutes({ config, nodes, heartbeats: judged([heartbeatLease("cp-1", down)]) }).length,
    0,
  );
});
