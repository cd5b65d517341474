import assert from "node:assert/strict";
import {
  buildKeepalivedModel,
  type KeepalivedModel,
  serviceGroupOf,
} from "../../../../../providers/baremetal/keepalived/model.ts";
import { formatIp, parseIp } from "../../../../../src/net/ip.ts";
import { testConfig, vipRange } from "./_inventory.ts";

function build(input: Parameters<typeof buildKeepalivedModel>[0]): KeepalivedModel {
  const model = buildKeepalivedModel(input);
  if ("error" in model) throw new Error(model.error);
  return model;
}

/** instance name of every service VIP, as text. */
function placement(model: KeepalivedModel): Map<string, string> {
  const out = new Map<string, string>();
  for (const i of model.instances.filter((i) => i.kind === "service")) {
    for (const v of [...i.vips, ...i.excludedVips]) out.set(formatIp(v.family, v.value), i.name);
  }
  return out;
}

/** A small deterministic PRNG (mulberry32) so the property tests are reproducible. */
function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

Deno.test("buildKeepalivedModel() rejects a host that is not a control-plane machine", () => {
  const result = buildKeepalivedModel({ config: testConfig(), host: "worker-1", serviceVips: [] });
  assert.ok("error" in result);
  assert.match(result.error, /"worker-1": it is not a control-plane machine/);
  assert.match(result.error, /"cp-1", "cp-2", "cp-3"/);
});

Deno.test("buildKeepalivedModel() reserves the lowest VRIDs for the control-plane VIPs", () => {
  const config = testConfig({
    controlPlaneVips: ["10.250.0.100", "fd00::100"],
    ips: [
      ["10.250.0.11", "fd00::11"],
      ["10.250.0.12", "fd00::12"],
      ["10.250.0.13", "fd00::13"],
    ],
  });
  const model = build({ config, host: "cp-2", serviceVips: vipRange(60) });
  const cp = model.instances.filter((i) => i.kind === "control-plane");
  assert.deepEqual(cp.map((i) => [i.name, i.vrid, i.preempt, i.trackApiserver]), [
    ["keelson_cp_v4", 100, false, true],
    ["keelson_cp_v6", 101, false, true],
  ]);
  const serviceVrids = model.instances.filter((i) => i.kind === "service").map((i) => i.vrid);
  assert.ok(serviceVrids.every((v) => v >= 102 && v <= 119), String(serviceVrids));
  assert.equal(model.trackFile?.path, "/run/keelson/apiserver-health");
  assert.equal(model.trackFile?.initValue, 1);
});

Deno.test("buildKeepalivedModel() keeps Service VRIDs the same with or without a CP VIP", () => {
  const vips = vipRange(30);
  const withCp = build({ config: testConfig(), host: "cp-1", serviceVips: vips });
  const withoutCp = build({
    config: testConfig({ controlPlaneVips: [] }),
    host: "cp-1",
    serviceVips: vips,
  });
  const services = (m: KeepalivedModel) =>
    m.instances.filter((i) => i.kind === "service").map((i) => [i.name, i.vrid]);
  assert.deepEqual(services(withCp), services(withoutCp));
  assert.equal(withoutCp.trackFile, undefined);
});

Deno.test("buildKeepalivedModel() never moves other VIPs when one VIP is added or removed", () => {
  const random = prng(42);
  const config = testConfig();
  for (let round = 0; round < 200; round++) {
    const count = 1 + Math.floor(random() * 80);
    const vips = [
      ...new Set(
        Array.from(
          { length: count },
          () =>
            `10.${Math.floor(random() * 256)}.${Math.floor(random() * 256)}.${
              Math.floor(random() * 256)
            }`,
        ),
      ),
    ];
    const extra = `172.16.${Math.floor(random() * 256)}.${Math.floor(random() * 256)}`;
    const before = placement(build({ config, host: "cp-1", serviceVips: vips }));
    const after = placement(build({ config, host: "cp-1", serviceVips: [...vips, extra] }));
    for (const [vip, instance] of before) assert.equal(after.get(vip), instance, vip);
    const removed = vips.slice(1);
    const afterRemove = placement(build({ config, host: "cp-1", serviceVips: removed }));
    for (const [vip, instance] of afterRemove) assert.equal(before.get(vip), instance, vip);
  }
});

Deno.test("buildKeepalivedModel() is deterministic whatever the input order", () => {
  const vips = vipRange(45);
  const a = build({ config: testConfig(), host: "cp-3", serviceVips: vips });
  const b = build({ config: testConfig(), host: "cp-3", serviceVips: [...vips].reverse() });
  assert.deepEqual(a, b);
});

Deno.test("buildKeepalivedModel() rotates priorities so each host masters some groups", () => {
  const vips = vipRange(40);
  const models = ["cp-1", "cp-2", "cp-3"].map((host) =>
    build({ config: testConfig(), host, serviceVips: vips })
  );
  const masters = new Map<string, string>();
  for (const [index, instance] of models[0]!.instances.entries()) {
    const priorities = models.map((m) => m.instances[index]!.priority);
    assert.equal(new Set(priorities).size, 3, `${instance.name} has equal priorities`);
    const best = priorities.indexOf(Math.max(...priorities));
    masters.set(instance.name, `cp-${best + 1}`);
  }
  assert.equal(masters.get("keelson_cp_v4"), "cp-1");
  assert.deepEqual(new Set(masters.values()), new Set(["cp-1", "cp-2", "cp-3"]));
});

Deno.test("buildKeepalivedModel() uses a machine's keepalived_priority for all its instances", () => {
  const config = testConfig();
  config.machines[1]!.keepalived_priority = 42;
  const model = build({ config, host: "cp-2", serviceVips: vipRange(10) });
  assert.ok(model.instances.every((i) => i.priority === 42));
});

Deno.test("buildKeepalivedModel() spills past max_vips_per_instance into excluded VIPs", () => {
  const config = testConfig({ keepalived: { vrid_range: [100, 102], max_vips_per_instance: 20 } });
  const model = build({ config, host: "cp-1", serviceVips: vipRange(45) });
  const [group] = model.instances.filter((i) => i.kind === "service");
  assert.equal(group?.vips.length, 20);
  assert.equal(group?.excludedVips.length, 25);
  const all = [...group!.vips, ...group!.excludedVips].map((v) => v.value);
  assert.deepEqual(all, [...all].sort((a, b) => (a < b ? -1 : 1)));
});

Deno.test("buildKeepalivedModel() uses unicast peers by default and none for multicast", () => {
  const unicast = build({ config: testConfig(), host: "cp-2", serviceVips: [] });
  const cp = unicast.instances[0]!;
  assert.equal(formatIp(4, cp.unicastSrcIp!.value), "10.250.0.12");
  assert.deepEqual(cp.unicastPeers.map((p) => formatIp(4, p.value)), [
    "10.250.0.11",
    "10.250.0.13",
  ]);
  const multicast = build({
    config: testConfig({ keepalived: { unicast: false } }),
    host: "cp-2",
    serviceVips: [],
  });
  assert.equal(multicast.instances[0]!.unicastSrcIp, undefined);
  assert.deepEqual(multicast.instances[0]!.unicastPeers, []);
});

Deno.test("buildKeepalivedModel() refuses unicast IPv6 VIPs when the host has no IPv6", () => {
  const result = buildKeepalivedModel({
    config: testConfig(),
    host: "cp-1",
    serviceVips: ["fd00::200"],
  });
  assert.ok("error" in result);
  assert.match(result.error, /machine "cp-1" has no IPv6 address in internal_ips/);
});

Deno.test("buildKeepalivedModel() skips Service VIPs that are not IPs or are the CP VIP", () => {
  const model = build({
    config: testConfig(),
    host: "cp-1",
    serviceVips: ["10.250.0.100", "10.0.0.1 }\nnotify /bin/sh", "10.250.0.150", "010.250.0.150"],
  });
  assert.deepEqual(model.skipped.map((s) => s.reason), [
    "is the control-plane VIP",
    "not an IP address",
    "not an IP address",
  ]);
  assert.deepEqual([...placement(model).keys()], ["10.250.0.150"]);
});

Deno.test("buildKeepalivedModel() defaults give a sub-second advert (0.2s, VRRPv3)", () => {
  const model = build({ config: testConfig(), host: "cp-1", serviceVips: [] });
  // master-down = 3 * advert + skew (< 1 advert): 0.6-0.8 s; the lab measured 0.68-0.73 s.
  assert.equal(model.advertIntMs, 200);
  assert.ok(4 * model.advertIntMs < 1000);
});

Deno.test("serviceGroupOf() depends only on the address and the group count", () => {
  const ip = parseIp("10.250.0.150")!;
  assert.equal(serviceGroupOf(ip, 18), serviceGroupOf({ ...ip }, 18));
  const counts = new Array(18).fill(0);
  for (const v of vipRange(1800, 0, 0)) counts[serviceGroupOf(parseIp(v)!, 18)]++;
  // spread: no group gets more than twice its fair share of 100
  assert.ok(Math.max(...counts) < 200 && Math.min(...counts) > 0, String(counts));
});

Deno.test("buildKeepalivedModel(): maintenance and shutdown machines hold every VIP back and stay the others' peers; a retired one leaves", () => {
  const base = testConfig();
  const withState = (state: "maintenance" | "shutdown" | "retired") => ({
    ...base,
    machines: base.machines.map((m) => (m.name === "cp-2" ? { ...m, state } : m)),
  });
  const vips = vipRange(8);
  for (const state of ["maintenance", "shutdown"] as const) {
    const config = withState(state);
    // the machine itself renders no instance, and the others keep it as a unicast peer
    const own = build({ config, host: "cp-2", serviceVips: vips, controlPlaneHealthy: true });
    assert.deepEqual(own.instances, [], state);
    assert.deepEqual(own.withheld, {
      reason: `machine "cp-2" is in state "${state}", not "active"`,
      controlPlane: true,
    });
    const peers = build({ config, host: "cp-1", serviceVips: [] }).instances[0]!.unicastPeers;
    assert.deepEqual(peers.map((p) => formatIp(p.family, p.value)), ["10.250.0.12", "10.250.0.13"]);
    // the others' files do not change: nothing renumbers, no priority moves
    assert.deepEqual(
      build({ config, host: "cp-1", serviceVips: vips }).instances,
      build({ config: base, host: "cp-1", serviceVips: vips }).instances,
    );
  }
  const retired = withState("retired");
  assert.ok("error" in buildKeepalivedModel({ config: retired, host: "cp-2", serviceVips: [] }));
  const peers =
    build({ config: retired, host: "cp-1", serviceVips: [] }).instances[0]!.unicastPeers;
  assert.deepEqual(peers.map((p) => formatIp(p.family, p.value)), ["10.250.0.13"]);
});

Deno.test("buildKeepalivedModel(): a NotReady Node holds the Service VIPs back and keeps the control-plane instance", () => {
  const config = testConfig();
  const vips = vipRange(8);
  const ready = build({ config, host: "cp-1", serviceVips: vips });
  assert.ok(ready.instances.some((i) => i.kind === "service"), "the VIPs reach the file");
  assert.equal(ready.withheld, undefined);
  const notReady = build({ config, host: "cp-1", serviceVips: vips, nodeReady: false });
  assert.deepEqual(
    notReady.instances.map((i) => i.name),
    ready.instances.filter((i) => i.kind === "control-plane").map((i) => i.name),
  );
  assert.ok(notReady.instances.length > 0, "the control-plane instance stays");
  assert.deepEqual(notReady.withheld, { reason: 'Node "cp-1" is not Ready', controlPlane: false });
  assert.deepEqual(notReady.skipped, [], "held back, not skipped: no address warning");
});
