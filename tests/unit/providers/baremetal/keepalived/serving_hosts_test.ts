/**
 * VRRP groups follow a pool's serving hosts (`[pools.served_by]`): a pool served by workers is
 * held by a group of those workers only, the control-plane VIP stays with the control-plane
 * machines, a host outside every group renders nothing, and groups that share a member never
 * share a VRID (a property over random inventories).
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  buildKeepalivedModel,
  type KeepalivedModel,
  serviceGroupOf,
} from "../../../../../providers/baremetal/keepalived/model.ts";
import { ConfigSchema } from "../../../../../src/config/schema.ts";
import type { Config } from "../../../../../src/config/types.ts";
import { formatIp, parseIp } from "../../../../../src/net/ip.ts";

const MACHINES = [
  { name: "cp-1", role: "control-plane", internal_ips: ["10.250.0.11"] },
  { name: "cp-2", role: "control-plane", internal_ips: ["10.250.0.12"] },
  { name: "w-1", role: "worker", internal_ips: ["10.250.0.21"], labels: { edge: "yes" } },
  { name: "w-2", role: "worker", internal_ips: ["10.250.0.22"], labels: { edge: "yes" } },
  { name: "w-3", role: "worker", internal_ips: ["10.250.0.23"] },
];

function config(
  pools: Record<string, unknown>[],
  keepalived: Record<string, unknown> = {},
): Config {
  return ConfigSchema.parse({
    keepalived: { interface: "eth0", vrid_range: [100, 119], ...keepalived },
    control_plane: { vip: ["10.250.0.100"] },
    pools,
    machines: MACHINES,
  });
}

const EDGE_AND_INNER = [
  { name: "inner", addresses: ["10.250.1.0/24"] },
  { name: "edge", addresses: ["10.250.2.0/24"], served_by: { labels: { edge: "yes" } } },
];

function build(c: Config, host: string, serviceVips: string[]): KeepalivedModel {
  const model = buildKeepalivedModel({ config: c, host, serviceVips });
  if ("error" in model) throw new Error(model.error);
  return model;
}

function held(model: KeepalivedModel): string[] {
  return model.instances.filter((i) => i.kind === "service")
    .flatMap((i) => [...i.vips, ...i.excludedVips]).map((v) => formatIp(v.family, v.value))
    .sort();
}

const text = (ips: { family: 4 | 6; value: bigint }[]) =>
  ips.map((ip) => formatIp(ip.family, ip.value));

Deno.test("a pool served by workers is held by a VRRP group of those workers only", () => {
  const c = config(EDGE_AND_INNER);
  const vips = ["10.250.1.10", "10.250.2.10"];
  const w1 = build(c, "w-1", vips);
  const w2 = build(c, "w-2", vips);
  const cp1 = build(c, "cp-1", vips);
  assert.deepEqual(held(w1), ["10.250.2.10"]);
  assert.deepEqual(held(w2), ["10.250.2.10"]);
  assert.deepEqual(held(cp1), ["10.250.1.10"]);
  // workers take no part in the control-plane VIP; control-plane hosts keep it
  assert.ok(!w1.instances.some((i) => i.kind === "control-plane"));
  assert.equal(w1.trackFile, undefined);
  assert.ok(cp1.instances.some((i) => i.kind === "control-plane"));
  // the workers peer with each other only, on one VRID, one preferred
  const [g1] = w1.instances;
  const [g2] = w2.instances;
  assert.deepEqual(text(g1!.unicastPeers), ["10.250.0.22"]);
  assert.deepEqual(text(g2!.unicastPeers), ["10.250.0.21"]);
  assert.equal(g1!.vrid, g2!.vrid);
  assert.notEqual(g1!.priority, g2!.priority);
  // the control-plane group's peers are the control-plane machines only
  const cpService = cp1.instances.find((i) => i.kind === "service")!;
  assert.deepEqual(text(cpService.unicastPeers), ["10.250.0.12"]);
});

Deno.test("a host outside every group renders nothing; one that serves no pool is refused", () => {
  const c = config(EDGE_AND_INNER);
  const result = buildKeepalivedModel({ config: c, host: "w-3", serviceVips: ["10.250.2.10"] });
  assert.ok("error" in result);
  assert.match(result.error, /"w-3": it is not a control-plane machine/);
  // w-1 serves edge but no VIP of it exists yet: no instance at all
  assert.deepEqual(build(c, "w-1", ["10.250.1.10"]).instances, []);
});

Deno.test("without served_by, groups and VRIDs are the control-plane ones", () => {
  const plain = config([{ name: "inner", addresses: ["10.250.1.0/24"] }]);
  const explicit = config([{
    name: "inner",
    addresses: ["10.250.1.0/24"],
    served_by: { roles: ["control-plane"] },
  }]);
  const vips = Array.from({ length: 40 }, (_, i) => `10.250.1.${i + 1}`);
  assert.deepEqual(build(plain, "cp-2", vips), build(explicit, "cp-2", vips));
});

/** Two VIPs of different pools whose natural Service group is the same. */
function collidingPair(groupCount: number): [string, string] {
  const first = "10.250.3.1";
  const g = serviceGroupOf(parseIp(first)!, groupCount);
  for (let n = 1; n < 255; n++) {
    const other = `10.250.4.${n}`;
    if (serviceGroupOf(parseIp(other)!, groupCount) === g) return [first, other];
  }
  throw new Error("no colliding pair");
}

Deno.test("two groups sharing a host never share a VRID; each member agrees on it", () => {
  const c = config([
    { name: "a", addresses: ["10.250.3.0/24"], served_by: { machines: ["w-1", "w-2"] } },
    { name: "b", addresses: ["10.250.4.0/24"], served_by: { machines: ["w-2", "w-3"] } },
  ]);
  const vips = collidingPair(18);
  const w2 = build(c, "w-2", vips);
  assert.equal(w2.instances.length, 2);
  const [x, y] = w2.instances;
  assert.notEqual(x!.vrid, y!.vrid);
  const byVip = (m: KeepalivedModel, vip: string) =>
    m.instances.find((i) => text(i.vips).includes(vip))!;
  assert.equal(byVip(build(c, "w-1", vips), vips[0]).vrid, byVip(w2, vips[0]).vrid);
  assert.equal(byVip(build(c, "w-3", vips), vips[1]).vrid, byVip(w2, vips[1]).vrid);
});

Deno.test("with multicast VRRP, disjoint groups never share a VRID either", () => {
  const c = config([
    { name: "a", addresses: ["10.250.3.0/24"] },
    { name: "b", addresses: ["10.250.4.0/24"], served_by: { machines: ["w-1", "w-2"] } },
  ], { unicast: false });
  const vips = collidingPair(18);
  assert.notEqual(
    build(c, "cp-1", vips).instances.at(-1)!.vrid,
    build(c, "w-1", vips).instances[0]!.vrid,
  );
});

Deno.test("property: every VIP is held by exactly its pool's serving hosts, on one VRID", () => {
  const names = MACHINES.map((m) => m.name);
  const selection = fc.subarray(names, { minLength: 1 });
  fc.assert(
    fc.property(
      fc.array(selection, { minLength: 1, maxLength: 4 }),
      fc.array(fc.tuple(fc.nat(3), fc.integer({ min: 1, max: 254 })), { maxLength: 40 }),
      fc.boolean(),
      (servers, picks, unicast) => {
        const pools = servers.map((machines, i) => ({
          name: `p${i}`,
          addresses: [`10.250.${10 + i}.0/24`],
          served_by: { machines },
        }));
        const c = config(pools, { unicast, vrid_range: [100, 109] });
        const vips = picks.filter(([p]) => p < pools.length)
          .map(([p, n]) => `10.250.${10 + p}.${n}`);
        const models = new Map(
          names.filter((n) => n.startsWith("cp-") || servers.some((s) => s.includes(n))).map((
            n,
          ) => [n, build(c, n, vips)]),
        );
        // per VIP: the hosts that hold it and the VRID each uses
        const holders = new Map<string, Map<string, number>>();
        for (const [host, model] of models) {
          const vrids = model.instances.map((i) => `${i.family}/${i.vrid}`);
          assert.equal(new Set(vrids).size, vrids.length, `${host}: a VRID used twice`);
          for (const i of model.instances.filter((i) => i.kind === "service")) {
            for (const vip of text([...i.vips, ...i.excludedVips])) {
              const m = holders.get(vip) ?? new Map<string, number>();
              m.set(host, i.vrid);
              holders.set(vip, m);
            }
          }
        }
        const skipped = new Set([...models.values()].flatMap((m) => m.skipped.map((s) => s.value)));
        for (const vip of new Set(vips)) {
          const pool = Number(vip.split(".")[2]) - 10;
          const expected = [...servers[pool]!].sort();
          const m = holders.get(vip);
          if (m === undefined) {
            // only a full VRID range leaves a VIP out, and it says so
            assert.ok(skipped.has(vip), `${vip} neither held nor skipped`);
            continue;
          }
          assert.deepEqual([...m.keys()].sort(), expected, vip);
          assert.equal(new Set(m.values()).size, 1, `${vip}: members disagree on the VRID`);
        }
        // multicast: one VRID per group on the whole segment
        if (!unicast) {
          const owners = new Map<string, string>();
          for (const m of holders.values()) {
            const key = String([...m.values()][0]);
            const group = [...m.keys()].sort().join(",");
            const was = owners.get(key);
            assert.ok(was === undefined || was === group, `VRID ${key} for two groups`);
            owners.set(key, group);
          }
        }
      },
    ),
    { numRuns: 200 },
  );
});
