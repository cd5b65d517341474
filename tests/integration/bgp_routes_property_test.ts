/**
 * Property campaign over BGP (hostile Nodes and hostile BGP settings), with fast-check: generated BGP
 * inventories (valid values mixed with hostile peers, source addresses, router ids, families)
 * and generated Nodes (inventory and foreign names, providerIDs, pod CIDRs and InternalIPs an
 * attacker would write). Properties:
 *
 * 1. only a ConfigError ever escapes `check`;
 * 2. for every inventory `check` accepts, every Node CIDR is either announced or refused, and
 *    every announced route satisfies the rules: the Node's machine is in the inventory (by
 *    providerID or name, not retired, one Node per machine), the next hop is one of that
 *    machine's internal_ips, unicast, neither a pool address, the control-plane VIP nor a peer;
 *    the CIDR lies inside cluster_cidr and is smaller; no two Nodes' CIDRs overlap;
 * 3. every control-plane host's BIRD file renders, stays in the line grammar, and exports only
 *    those routes;
 * 4. a bounded sample (30) of those files passes `bird -p`.
 *
 * Seeds and counts are fixed (a failure prints its seed); the counts are printed.
 *
 * @module
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { stringify } from "smol-toml";
import type { V1Node } from "@kubernetes/client-node";
import { ConfigError } from "../../src/config/config_error.ts";
import { parseConfig } from "../../src/config/parse_config.ts";
import { clusterCidrRanges } from "../../src/config/cluster_cidr.ts";
import { type Config, machineId } from "../../src/config/types.ts";
import { canonicalIp, formatIp, nonUnicastProblem, parseIp, parseRange } from "../../src/net/ip.ts";
import { decidePodRoutes } from "../../providers/baremetal/bird/decide_pod_routes.ts";
import { renderHostBird } from "../../providers/baremetal/bird/host_config.ts";
import { offGrammar } from "../unit/providers/baremetal/bird/_inventory.ts";
import { birdParse, requireTool } from "../_support/tools.ts";

const encoder = new TextEncoder();
function report(line: string): void {
  Deno.stderr.writeSync(encoder.encode(`${line}\n`));
}

const CP_VIP = "10.0.0.10";
const BGP_POOL_V4 = "198.51.100.0/28";
const BGP_POOL_V6 = "2001:db8:100::/124";

const rare = <T>(usual: T, ...others: T[]) =>
  fc.oneof({ weight: 6, arbitrary: fc.constant(usual) }, {
    weight: 1,
    arbitrary: fc.constantFrom(...others),
  });

/** Peer addresses: routers, and what an attacker or a careless operator would write. */
const peerAddress = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom("10.0.0.1", "10.0.0.2", "10.0.1.1", "10.9.0.1") },
  { weight: 3, arbitrary: fc.constantFrom("fd00::1", "fd00:1::1", "169.254.0.1") },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      "fe80::1",
      "fe80::1%eth0",
      "::",
      "0.0.0.0",
      "127.0.0.1",
      "::1",
      "255.255.255.255",
      "224.0.0.5",
      "ff02::2",
      "10.0.0.11",
      "10.0.0.21",
      CP_VIP,
      "192.0.2.5",
      "198.51.100.3",
      "2001:db8:100::3",
      "::ffff:10.0.0.1",
    ),
  },
);

const peerArb = fc.record({
  address: peerAddress,
  asn: fc.constantFrom(64512, 64513, 65000),
  multihop: fc.constantFrom(0, 0, 2),
  /** `own`: the /24 or /64 holding the address; else none or a subnet that may not hold it. */
  subnet: rare("own", "none", "10.0.0.0/24", "fe80::/64"),
  pod_cidrs: fc.boolean(),
  control_plane: rare(true, false),
  pools: rare<string[]>([], ["bgp"], ["vrrp"]),
  hosts: fc.constantFrom([], [], ["cp-3"], ["cp-1", "cp-2"]),
  bfd: fc.boolean(),
});

const cpArb = (n: number, v4: string, v6: string) =>
  fc.record({
    dual: rare(true, false),
    router_id: rare<string | undefined>(undefined, `10.255.0.${n}`, "10.255.0.1", "0.0.0.0"),
    source_address: rare<string | undefined>(undefined, v4, v6, "10.0.0.11", "fe80::1", CP_VIP),
    retired: rare(false, true),
  }).map((m) => ({ name: `cp-${n}`, v4, v6, ...m }));

const inventoryArb = fc.record({
  families: rare(["ipv4", "ipv6"], ["ipv4"], ["ipv6"], ["ipv4", "ipv4"]),
  cpAnnounce: fc.constantFrom("vrrp", "bgp"),
  poolV6: fc.boolean(),
  cps: fc.tuple(
    cpArb(1, "10.0.0.11", "fd00::11"),
    cpArb(2, "10.0.0.12", "fd00::12"),
    cpArb(3, "10.0.1.13", "fd00:1::13"),
  ),
  // worker w-3's own addresses: some may never be next hops (check accepts them as machine IPs)
  w3: fc.constantFrom(
    ["10.0.0.23"],
    ["224.0.0.5"],
    ["127.0.0.1", "10.0.0.23"],
    ["169.254.0.9"],
    ["fd00::23"],
  ),
  peers: fc.uniqueArray(peerArb, {
    minLength: 1,
    maxLength: 3,
    selector: (p) => canonicalIp(p.address) ?? p.address,
  }),
});

type Inventory = typeof inventoryArb extends fc.Arbitrary<infer T> ? T : never;

/** The /24 (IPv4) or /64 (IPv6) holding an address, or the text itself when it is not one. */
function own(address: string): string {
  const ip = parseIp(address);
  if (!ip) return address;
  const width = ip.family === 4 ? 32 : 128;
  const length = ip.family === 4 ? 24 : 64;
  const shift = BigInt(width - length);
  return `${formatIp(ip.family, (ip.value >> shift) << shift)}/${length}`;
}

function toToml(inv: Inventory): string {
  const machines: Record<string, unknown>[] = inv.cps.map((cp) => ({
    name: cp.name,
    role: "control-plane",
    zone: cp.name === "cp-3" ? "row-b" : "row-a",
    internal_ips: cp.dual ? [cp.v4, cp.v6] : [cp.v4],
    ...(cp.retired ? { state: "retired" } : {}),
    ...(cp.router_id || cp.source_address
      ? {
        bgp: {
          ...(cp.router_id ? { router_id: cp.router_id } : {}),
          ...(cp.source_address ? { source_address: cp.source_address } : {}),
        },
      }
      : {}),
  }));
  machines.push(
    { name: "w-1", internal_ips: ["10.0.0.21", "fd00::21"] },
    { name: "w-2", id: "SN-W2", internal_ips: ["10.0.1.22"] },
    { name: "w-3", internal_ips: inv.w3 },
    { name: "w-4", state: "retired", internal_ips: ["10.0.0.24"] },
  );
  return stringify({
    cluster: { cluster_cidr: ["10.244.0.0/16", "fd00:244::/48"] },
    keepalived: { interface: "eth0" },
    control_plane: { vip: [CP_VIP], announce: inv.cpAnnounce },
    bgp: {
      asn: 64513,
      families: inv.families,
      peers: inv.peers.map((p, i) => ({
        name: `peer-${i}`,
        address: p.address,
        asn: p.asn,
        multihop: p.multihop,
        ...(p.subnet === "none" ? {} : { subnet: p.subnet === "own" ? own(p.address) : p.subnet }),
        pod_cidrs: p.pod_cidrs,
        control_plane: p.control_plane,
        pools: p.pools,
        hosts: p.hosts,
        bfd: p.bfd,
      })),
    },
    pools: [
      { name: "vrrp", addresses: ["192.0.2.0/28"] },
      {
        name: "bgp",
        addresses: inv.poolV6 ? [BGP_POOL_V4, BGP_POOL_V6] : [BGP_POOL_V4],
        announce: "bgp",
      },
    ],
    machines,
  });
}

const podCidr = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 7 }).map((n) => `10.244.${n}.0/24`) },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 5 }).map((n) => `fd00:244:0:${n}::/64`) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      "10.244.0.0/16",
      "10.244.2.0/23",
      "10.244.3.128/25",
      "fd00:244::/48",
      "0.0.0.0/0",
      "10.245.0.0/24",
      "198.51.100.0/28",
      "10.244.1.5/24",
      "10.244.1.0/24; }",
      "junk",
      "",
    ),
  },
);

const nodeIp = fc.constantFrom(
  "10.0.0.11",
  "10.0.0.21",
  "10.0.1.22",
  "10.0.0.23",
  "fd00::21",
  "10.0.0.2",
  "10.0.0.1",
  CP_VIP,
  "198.51.100.5",
  "224.0.0.5",
  "127.0.0.1",
  "0.0.0.0",
  "::",
  "fe80::1",
  "not-an-ip",
);

const nodeArb = fc.record({
  name: fc.constantFrom("cp-1", "cp-2", "cp-3", "w-1", "w-2", "w-3", "w-4", "intruder", "ghost"),
  providerID: fc.constantFrom(
    undefined,
    undefined,
    "baremetal://w-1",
    "baremetal://SN-W2",
    "baremetal://cp-1",
    "baremetal://nobody",
    "other://w-1",
  ),
  cidrs: fc.array(podCidr, { maxLength: 3 }),
  ips: fc.array(nodeIp, { maxLength: 3 }),
});

function toNodes(raw: { name: string; providerID?: string; cidrs: string[]; ips: string[] }[]) {
  const seen = new Set<string>();
  const nodes: V1Node[] = [];
  for (const n of raw) {
    if (seen.has(n.name)) continue; // one Node per name, as the API has it
    seen.add(n.name);
    nodes.push({
      metadata: { name: n.name },
      spec: { podCIDRs: n.cidrs, ...(n.providerID ? { providerID: n.providerID } : {}) },
      status: { addresses: n.ips.map((address) => ({ type: "InternalIP", address })) },
    });
  }
  return nodes;
}

function check(text: string): Config | undefined {
  try {
    return parseConfig(text, "fuzz.toml");
  } catch (error) {
    assert.ok(error instanceof ConfigError, `check threw ${error}`);
    return undefined;
  }
}

/** Asserts every rule of an announced route (the property the routers rely on). */
function assertRules(config: Config, nodes: readonly V1Node[]): Set<string> {
  const decision = decidePodRoutes({ config, nodes });
  const clusters = clusterCidrRanges(config);
  const pools = config.pools.flatMap((p) =>
    p.addresses.flatMap((a) => {
      const r = parseRange(a);
      return "error" in r ? [] : [r];
    })
  );
  const forbidden = new Set(
    [...config.control_plane.vip, ...(config.bgp?.peers ?? []).map((p) => p.address)]
      .map((a) => canonicalIp(a)),
  );
  const announced = new Set<string>();
  const machinesUsed = new Map<string, string>();
  const ranges: { node: string; family: number; first: bigint; last: bigint }[] = [];
  for (const route of decision.announced) {
    const node = nodes.find((n) => n.metadata?.name === route.node)!;
    const machine = config.machines.find((m) => m.name === route.machine);
    assert.ok(machine, `${route.node}: machine ${route.machine} not in the inventory`);
    assert.notEqual(machine.state, "retired", `${route.node}: retired machine`);
    assert.ok(
      node.spec?.providerID === `baremetal://${machineId(machine)}` ||
        node.metadata?.name === machine.name,
      `${route.node} is not ${machine.name} by providerID or name`,
    );
    const other = machinesUsed.get(machine.name);
    assert.ok(other === undefined || other === route.node, `two Nodes on ${machine.name}`);
    machinesUsed.set(machine.name, route.node);
    const hop = parseIp(route.nextHop)!;
    assert.ok(
      machine.internal_ips.some((ip) => canonicalIp(ip) === route.nextHop),
      `${route.node}: next hop ${route.nextHop} is not an address of ${machine.name}`,
    );
    assert.equal(nonUnicastProblem({ ...hop, first: hop.value, last: hop.value }), undefined);
    assert.ok(!forbidden.has(route.nextHop), `${route.node}: next hop ${route.nextHop} forbidden`);
    assert.ok(
      !pools.some((r) => r.family === hop.family && r.first <= hop.value && hop.value <= r.last),
      `${route.node}: next hop ${route.nextHop} in a pool`,
    );
    const range = parseRange(route.cidr);
    assert.ok(!("error" in range) && range.prefix !== undefined, route.cidr);
    assert.equal(range.family, hop.family);
    assert.ok(
      clusters.some((c) =>
        c.family === range.family && c.first <= range.first && range.last <= c.last &&
        (c.first !== range.first || c.last !== range.last)
      ),
      `${route.cidr} not strictly inside cluster_cidr`,
    );
    for (const r of ranges) {
      if (r.node === route.node || r.family !== range.family) continue;
      assert.ok(
        range.last < r.first || r.last < range.first,
        `${route.cidr} of ${route.node} overlaps a CIDR of ${r.node}`,
      );
    }
    ranges.push({ node: route.node, ...range });
    announced.add(`${route.cidr} ${route.nextHop}`);
  }
  // every pod CIDR of every Node is judged: announced or refused, with a reason
  const judged = decision.announced.length + decision.refused.length;
  const written = nodes.reduce((n, node) => n + (node.spec?.podCIDRs?.length ?? 0), 0);
  assert.equal(judged, written, "a pod CIDR was neither announced nor refused");
  for (const r of decision.refused) assert.ok(r.reason.length > 0);
  return announced;
}

const RUNS = 600;
const BIRD_SAMPLE = 30;

Deno.test("property: what check accepts, its pod routes keep the rules and its BIRD files pass bird -p", async () => {
  let accepted = 0, renders = 0, routes = 0, refused = 0;
  const sample = new Map<string, string>();
  fc.assert(
    fc.property(inventoryArb, fc.array(nodeArb, { maxLength: 8 }), (inv, rawNodes) => {
      const config = check(toToml(inv));
      if (!config) return;
      accepted++;
      const nodes = toNodes(rawNodes);
      const announced = assertRules(config, nodes);
      const decision = decidePodRoutes({ config, nodes });
      routes += decision.announced.length;
      refused += decision.refused.length;
      for (const machine of config.machines) {
        if (machine.role !== "control-plane") continue;
        const rendered = renderHostBird({
          config,
          host: machine.name,
          serviceVips: ["198.51.100.3", "2001:db8:100::5", "192.0.2.3", CP_VIP],
          nodes,
          controlPlaneHealthy: true,
        });
        assert.ok(!("error" in rendered), `render refused what check accepted: ${rendered}`);
        renders++;
        assert.deepEqual(offGrammar(rendered.text), []);
        for (
          const m of rendered.text.matchAll(/route (\S+) blackhole \{ bgp_next_hop = ([^;]+);/g)
        ) {
          assert.ok(announced.has(`${m[1]} ${m[2]}`), `exported ${m[1]} via ${m[2]}`);
        }
        // keep distinct shapes for bird -p: one per combination of peers and statics
        const shape = rendered.text.split("\n").filter((l) =>
          /^(protocol| {2}(neighbor|local|direct|multihop|ipv))/.test(l)
        ).join("|");
        if (sample.size < BIRD_SAMPLE && !sample.has(shape)) sample.set(shape, rendered.text);
      }
    }),
    { numRuns: RUNS, seed: 2201 },
  );
  report(
    `fuzz: ${RUNS} BGP inventories with generated Nodes: ${accepted} accepted by check, ` +
      `${renders} BIRD files, ${routes} pod routes announced and ${refused} refused, all within ` +
      "the rules",
  );
  assert.ok(accepted > RUNS / 10, `too few accepted inventories (${accepted})`);
  assert.ok(routes > 0 && refused > 0, "the generator never produced both outcomes");

  requireTool("bird");
  assert.ok(sample.size > 0);
  for (const text of sample.values()) {
    const parsed = await birdParse(text);
    assert.equal(parsed.code, 0, `bird -p refused:\n${parsed.output}\n${text}`);
  }
  report(`fuzz: bird -p accepted all ${sample.size} sampled BIRD files`);
});
