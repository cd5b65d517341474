/**
 * Property campaign over the trust boundary (fast-check): generated hostile inventories, Services and
 * Nodes against `check`, `plan` and `render`. Properties:
 *
 * 1. no exception but a ConfigError escapes `check` (any text, any TOML-shaped value);
 * 2. no exception escapes the snapshot reader, `plan` or `render`: a bad snapshot is an Error
 *    whose message names the file;
 * 3. for every inventory `check` accepts and every generated snapshot, `render` succeeds on every
 *    control-plane host, the file matches an allow-list grammar, and no address outside the
 *    pools (other than the control-plane VIP) is rendered;
 * 4. a bounded sample of those files passes `keepalived -t` (in a network namespace of ours with
 *    an `eth0`, since keepalived refuses unknown and loopback interfaces); keepalived, `ip` and
 *    root are required (tests/_support/tools.ts), so this tier is where the campaign runs.
 *
 * Case counts are fixed (seeded runs are reproducible: a failure prints its seed) and printed.
 *
 * @module
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { stringify } from "smol-toml";
import type { V1Node, V1Service } from "@kubernetes/client-node";
import { ConfigError } from "../../src/config/config_error.ts";
import { parseConfig } from "../../src/config/parse_config.ts";
import { poolUsableIntervals } from "../../src/config/pool_size.ts";
import type { Config } from "../../src/config/types.ts";
import { policyFromConfig } from "../../src/controllers/node_lifecycle/node_lifecycle_controller.ts";
import { formatPlan } from "../../src/plan/format_plan.ts";
import { planNodes } from "../../src/plan/plan_nodes.ts";
import { parseSnapshot } from "../../src/snapshot/load_snapshot.ts";
import { parseIp } from "../../src/net/ip.ts";
import { convergedServices } from "../../providers/baremetal/ipam/plan_allocations.ts";
import { createBaremetalProvider } from "../../providers/baremetal/mod.ts";
import { planAllocations } from "../../providers/baremetal/ipam/plan_allocations.ts";
import { renderHostKeepalived } from "../../providers/baremetal/keepalived/announcer.ts";
import { servedServiceAddresses } from "../../providers/baremetal/keepalived/served_addresses.ts";
import { requireRoot, requireTool } from "../_support/tools.ts";

const encoder = new TextEncoder();
function report(line: string): void {
  Deno.stderr.writeSync(encoder.encode(`${line}\n`));
}

/** Addresses an attacker or a careless operator would write. */
const HOSTILE_IPS = [
  "224.0.0.18",
  "127.0.0.1",
  "0.0.0.0",
  "255.255.255.255",
  "::",
  "::1",
  "fe80::1",
  "fe80::1%eth0",
  "ff02::12",
  "::ffff:10.0.0.11",
  "10.0.0.11",
  "10.0.0.10",
  "10.0.0.300",
  "203.0.113.16",
  "203.0.113.31",
  "2001:db8:20::",
  "10.0.0.1 }\nnotify /bin/sh",
  "203.0.113.18/32",
  " 203.0.113.18",
  "",
];

const ipish = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 16, max: 31 }).map((n) => `203.0.113.${n}`) },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 40 }).map((n) => `2001:db8:20::${n}`) },
  { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_IPS) },
  { weight: 1, arbitrary: fc.ipV4() },
  { weight: 1, arbitrary: fc.ipV6() },
  { weight: 1, arbitrary: fc.string({ maxLength: 20 }) },
);

const rangeish = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom("203.0.113.16/28", "203.0.113.32/29", "2001:db8:20::/120"),
  },
  {
    weight: 2,
    arbitrary: fc.tuple(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 0, max: 50 }))
      .map(([a, n]) => `198.51.100.${a}-198.51.100.${Math.min(254, a + n)}`),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      "::",
      "::1",
      "0.0.0.0/0",
      "127.0.0.0/8",
      "224.0.0.0/24",
      "fe80::/64",
      "fe80::%eth0",
      "::ffff:203.0.113.16/124",
      "10.0.20.0/24/garbage",
      "10.0.30.1-10.0.30.5-junk",
      "10.0.0.0/24",
    ),
  },
  { weight: 1, arbitrary: ipish },
);

/** A TOML-shaped inventory an attacker or a careless operator would write. */
const hostileInventory = fc.record({
  keepalived: fc.record({
    enabled: fc.boolean(),
    interface: fc.oneof(
      { weight: 6, arbitrary: fc.constant("eth0") },
      { weight: 1, arbitrary: fc.constantFrom("bond0.100", "abcdefghijklmnopqrstuvwx", "a b", "") },
    ),
    vrid_range: fc.oneof(
      { weight: 5, arbitrary: fc.constant([100, 119]) },
      {
        weight: 1,
        arbitrary: fc.tuple(fc.integer({ min: -5, max: 300 }), fc.integer({ min: -5, max: 300 })),
      },
    ),
    unicast: fc.boolean(),
    advert_interval: fc.constantFrom("200ms", "1s", "5ms", "0s", "100h", "205ms", "40950ms"),
    garp_master_refresh: fc.oneof(fc.constant(60), fc.integer({ min: -1, max: 70_000 })),
    max_vips_per_instance: fc.integer({ min: 0, max: 25 }),
    track_file_dir: fc.constantFrom("/run/keelson", "run/keelson", '/run/a b"}', "/run/../etc"),
  }, { requiredKeys: ["enabled", "interface"] }),
  control_plane: fc.record({ vip: fc.array(ipish, { maxLength: 2 }) }),
  pools: fc.array(
    fc.record({
      name: fc.constantFrom("public", "internal", "v6", "Bad Name"),
      addresses: fc.array(rangeish, { minLength: 1, maxLength: 3 }),
      reserved: fc.array(ipish, { maxLength: 2 }),
    }),
    { maxLength: 3 },
  ),
  machines: fc.array(
    fc.record({
      name: fc.constantFrom("cp-1", "cp-2", "cp-3", "w-1", "w-2", "Evil"),
      role: fc.constantFrom("control-plane", "worker"),
      state: fc.constantFrom("active", "active", "maintenance", "retired"),
      internal_ips: fc.array(
        fc.oneof(
          fc.integer({ min: 11, max: 19 }).map((n) => `10.0.0.${n}`),
          fc.integer({ min: 11, max: 19 }).map((n) => `fd00::${n}`),
          ipish,
        ),
        { maxLength: 2 },
      ),
      hostname: fc.option(fc.constantFrom("cp-1.example.net", "evil host\n}{"), {
        nil: undefined,
      }),
    }, { requiredKeys: ["name", "role", "internal_ips"] }),
    { maxLength: 5 },
  ),
});

/** A TOML-shaped inventory an operator would write: most of these pass `check`. */
const plausibleInventory = fc.record({
  keepalived: fc.record({
    enabled: fc.constantFrom(true, true, true, false),
    interface: fc.constant("eth0"),
    vrid_range: fc.constantFrom([100, 119], [1, 4], [250, 255], [10, 12]),
    unicast: fc.boolean(),
    advert_interval: fc.constantFrom("200ms", "1s", "10ms", "40950ms", "2.5s"),
    garp_master_refresh: fc.integer({ min: 0, max: 3600 }),
    max_vips_per_instance: fc.integer({ min: 1, max: 20 }),
  }),
  control_plane: fc.record({ vip: fc.subarray(["10.0.0.10", "fd00::10"]) }),
  pools: fc.subarray([
    { name: "public", addresses: ["203.0.113.16/28"] },
    {
      name: "internal",
      addresses: ["198.51.100.0/29", "198.51.100.10-198.51.100.20"],
      reserved: ["198.51.100.12"],
    },
    { name: "v6", addresses: ["2001:db8:20::/120"], auto_assign: false },
  ], { minLength: 1 }),
  machines: fc.tuple(
    fc.integer({ min: 1, max: 3 }),
    fc.array(fc.constantFrom("active", "active", "maintenance", "retired"), {
      minLength: 5,
      maxLength: 5,
    }),
  ).map(([cps, states]) => [
    ...Array.from({ length: cps }, (_, i) => ({
      name: `cp-${i + 1}`,
      role: "control-plane",
      // the first control-plane machine is always active, so there is a VRRP peer
      state: i === 0 ? "active" : states[i]!,
      internal_ips: [`10.0.0.1${i + 1}`, `fd00::1${i + 1}`],
    })),
    { name: "w-1", internal_ips: ["10.0.0.21"], state: states[3]! },
    { name: "w-2", internal_ips: ["10.0.0.22"], state: states[4]! },
  ]),
});

const inventory = fc.oneof(
  { weight: 3, arbitrary: plausibleInventory },
  { weight: 1, arbitrary: hostileInventory },
);

const serviceArb = fc.record({
  name: fc.constantFrom("web", "db", "dns", "evil", "old", "new"),
  namespace: fc.constantFrom("default", "team"),
  type: fc.constantFrom("LoadBalancer", "LoadBalancer", "ClusterIP"),
  loadBalancerClass: fc.option(fc.constantFrom("keelson.io/vip", "other.io/lb"), {
    nil: undefined,
  }),
  ingress: fc.array(ipish, { maxLength: 3 }),
  loadBalancerIP: fc.option(ipish, { nil: undefined }),
  annotations: fc.dictionary(
    fc.constantFrom(
      "keelson.io/load-balancer-ips",
      "keelson.io/address-pool",
      "keelson.io/allow-shared-ip",
      "metallb.io/loadBalancerIPs",
      "keelson.io/allocated-from-pool",
    ),
    fc.oneof(ipish, fc.constantFrom("public", "v6", "k1", "a\n  forged line")),
    { maxKeys: 3 },
  ),
  ipFamilies: fc.option(fc.array(fc.constantFrom("IPv4", "IPv6", "IPv9"), { maxLength: 3 }), {
    nil: undefined,
  }),
  ipFamilyPolicy: fc.option(
    fc.constantFrom("SingleStack", "PreferDualStack", "RequireDualStack", "x"),
    {
      nil: undefined,
    },
  ),
  created: fc.integer({ min: 0, max: 1_000_000 }),
});

const nodeArb = fc.record({
  name: fc.constantFrom("cp-1", "cp-2", "w-1", "evil", "ghost"),
  providerID: fc.option(fc.constantFrom("baremetal://cp-1", "baremetal://w-1", "aws://x", ""), {
    nil: undefined,
  }),
  uninitialized: fc.boolean(),
  addresses: fc.array(ipish, { maxLength: 2 }),
});

function toService(
  s: unknown,
): V1Service {
  const v = s as {
    name: string;
    namespace: string;
    type: string;
    loadBalancerClass?: string;
    ingress: string[];
    loadBalancerIP?: string;
    annotations: Record<string, string>;
    ipFamilies?: string[];
    ipFamilyPolicy?: string;
    created: number;
  };
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name: v.name,
      namespace: v.namespace,
      annotations: v.annotations,
      creationTimestamp: new Date(1_700_000_000_000 + v.created * 1000),
    },
    spec: {
      type: v.type,
      ports: [{ port: 80, protocol: "TCP" }],
      ...(v.loadBalancerClass !== undefined && { loadBalancerClass: v.loadBalancerClass }),
      ...(v.loadBalancerIP !== undefined && { loadBalancerIP: v.loadBalancerIP }),
      ...(v.ipFamilies !== undefined && { ipFamilies: v.ipFamilies }),
      ...(v.ipFamilyPolicy !== undefined && { ipFamilyPolicy: v.ipFamilyPolicy }),
    },
    status: { loadBalancer: { ingress: v.ingress.map((ip) => ({ ip })) } },
  };
}

function toNode(n: {
  name: string;
  providerID?: string;
  uninitialized: boolean;
  addresses: string[];
}): V1Node {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: n.name },
    spec: {
      ...(n.providerID !== undefined && { providerID: n.providerID }),
      ...(n.uninitialized && {
        taints: [{
          key: "node.cloudprovider.kubernetes.io/uninitialized",
          value: "true",
          effect: "NoSchedule",
        }],
      }),
    },
    status: { addresses: n.addresses.map((address) => ({ type: "InternalIP", address })) },
  };
}

/** The allow-list: every line of a rendered file is one of these. */
const IP = "[0-9a-f.:]{2,45}";
const LINE_GRAMMAR = [
  /^# Generated by Keelson for host [a-z0-9.-]{1,63}\. Do not edit: Keelson rewrites this file\.$/,
  /^# VRRP instances for the control-plane VIP and LoadBalancer Service VIPs\.$/,
  /^# kube-apiserver health written by Keelson: 0 healthy, anything else FAULT\.$/,
  /^$/,
  /^track_file keelson_apiserver \{$/,
  /^ {4}file "\/[A-Za-z0-9._\/-]{1,255}"$/,
  /^ {4}weight 0$/,
  /^ {4}init_file [01]$/,
  /^\}$/,
  /^vrrp_instance keelson_(cp_v[46]|v[46]_g\d{1,3}) \{$/,
  /^ {4}state BACKUP$/,
  /^ {4}interface [a-z0-9.-]{1,15}$/,
  /^ {4}virtual_router_id \d{1,3}$/,
  /^ {4}priority \d{1,3}$/,
  /^ {4}advert_int \d{1,2}(\.\d{1,2})?$/,
  /^ {4}version 3$/,
  /^ {4}garp_master_refresh \d{1,4}$/,
  /^ {4}preempt_delay \d{1,4}$/,
  /^ {4}nopreempt$/,
  new RegExp(`^ {4}unicast_src_ip ${IP}$`),
  /^ {4}unicast_peer \{$/,
  new RegExp(`^ {8}${IP}$`),
  /^ {4}\}$/,
  /^ {4}virtual_ipaddress(_excluded)? \{$/,
  new RegExp(`^ {8}${IP}/(32|128) dev [a-z0-9.-]{1,15}$`),
  /^ {4}track_file \{$/,
  /^ {8}keelson_apiserver$/,
];

function assertGrammar(text: string): void {
  for (const line of text.split("\n").slice(0, -1)) {
    assert.ok(
      LINE_GRAMMAR.some((re) => re.test(line)),
      `line outside the grammar: ${JSON.stringify(line)}`,
    );
  }
  assert.ok(text.endsWith("\n"));
}

/** Every Service VIP of a rendered file lies in a pool's usable addresses. */
function assertOnlyPoolAddresses(config: Config, text: string): void {
  const key = (ip: { family: number; value: bigint } | undefined) => `${ip?.family}:${ip?.value}`;
  const cp = new Set(config.control_plane.vip.map((v) => key(parseIp(v))));
  const usable = config.pools.flatMap((p) => poolUsableIntervals(p));
  for (const match of text.matchAll(/^ {8}(\S+)\/(?:32|128) dev /gm)) {
    const ip = parseIp(match[1]!)!;
    assert.ok(ip, `${match[1]} is not an address`);
    if (cp.has(key(ip))) continue;
    assert.ok(
      usable.some((i) => i.family === ip.family && i.first <= ip.value && ip.value <= i.last),
      `${match[1]} rendered but no pool offers it`,
    );
  }
}

function tryCheck(raw: unknown): Config | undefined {
  let text: string;
  try {
    text = stringify(raw as Record<string, unknown>);
  } catch {
    return undefined; // not representable as TOML (e.g. an empty key): nothing to check
  }
  try {
    return parseConfig(text, "fuzz.toml");
  } catch (error) {
    assert.ok(error instanceof ConfigError, `check threw ${String(error)}`);
    for (const issue of error.issues) assert.equal(issue.file, "fuzz.toml");
    return undefined;
  }
}

const RUNS = { text: 300, inventories: 400, pairs: 250, snapshots: 300 };

Deno.test("property: only a ConfigError ever escapes check, whatever the text", () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 200 }), (text) => {
      try {
        parseConfig(text, "fuzz.toml");
      } catch (error) {
        assert.ok(error instanceof ConfigError, String(error));
      }
    }),
    { numRuns: RUNS.text, seed: 9001 },
  );
  fc.assert(
    fc.property(fc.jsonValue(), (value) => {
      tryCheck(
        typeof value === "object" && value !== null && !Array.isArray(value) ? value : { v: value },
      );
    }),
    { numRuns: RUNS.text, seed: 9002 },
  );
  report(`fuzz: check on ${RUNS.text} random texts and ${RUNS.text} random TOML values`);
});

Deno.test("property: the snapshot reader refuses anything ill-typed with a message, never a TypeError", () => {
  const value = fc.jsonValue({ maxDepth: 5 });
  const item = fc.record({
    kind: fc.constantFrom("Service", "Node", "PersistentVolume", "Pod"),
    metadata: fc.oneof(fc.record({ name: fc.constantFrom("a", "b") }), value),
    spec: value,
    status: value,
  });
  fc.assert(
    fc.property(fc.array(item, { maxLength: 4 }), (items) => {
      const text = JSON.stringify({ apiVersion: "v1", kind: "List", items });
      let snapshot;
      try {
        snapshot = parseSnapshot(text, "state.json");
      } catch (error) {
        assert.ok(error instanceof Error && !(error instanceof TypeError), String(error));
        assert.match(error.message, /^Cannot (read|parse) cluster state state\.json/);
        return;
      }
      // what the reader accepted, plan and render take without throwing
      const config = parseConfig(
        stringify({
          pools: [{ name: "p", addresses: ["203.0.113.16/28"] }],
          machines: [{ name: "cp-1", role: "control-plane", internal_ips: ["10.0.0.11"] }],
        }),
        "k.toml",
      );
      const plan = planAllocations(config, snapshot.services);
      formatPlan([], plan);
      const rendered = renderHostKeepalived({
        config,
        host: "cp-1",
        serviceVips: servedServiceAddresses(config, convergedServices(config, snapshot.services))
          .vips,
      });
      assert.ok(!("error" in rendered));
    }),
    { numRuns: RUNS.snapshots, seed: 9003 },
  );
  report(`fuzz: snapshot reader, plan and render on ${RUNS.snapshots} generated snapshots`);
});

/** Rendered files kept for the `keepalived -t` sample. */
const SAMPLE: string[] = [];

Deno.test("property: what check accepts, plan and render accept with any cluster state; only pool addresses are rendered", async () => {
  let accepted = 0, renders = 0;
  const pairs = fc.tuple(
    inventory,
    fc.array(serviceArb, { maxLength: 6 }),
    fc.array(nodeArb, { maxLength: 4 }),
  );
  await fc.assert(
    fc.asyncProperty(pairs, async ([raw, rawServices, rawNodes]) => {
      const config = tryCheck(raw);
      if (config === undefined) return;
      accepted++;
      const services = rawServices.map(toService);
      const nodes = rawNodes.map(toNode);
      // plan: no exception, and the text has one line per entry whatever annotations hold
      const provider = createBaremetalProvider(() => ({ config, healthy: true }));
      provider.instancesV2.useNodes(() => nodes);
      const nodePlans = await planNodes(nodes, provider.instancesV2, {
        policy: policyFromConfig(config),
      });
      const allocation = planAllocations(config, services);
      const text = formatPlan(nodePlans, allocation);
      assert.doesNotMatch(text, /forged line\n/);
      if (!config.keepalived.enabled) return;
      const vips = servedServiceAddresses(config, convergedServices(config, services)).vips;
      for (const machine of config.machines) {
        if (machine.role !== "control-plane" || machine.state === "retired") continue;
        const rendered = renderHostKeepalived({ config, host: machine.name, serviceVips: vips });
        assert.ok(
          !("error" in rendered),
          `render refused what check accepted: ${JSON.stringify(rendered)}`,
        );
        renders++;
        assertGrammar(rendered.text);
        assertOnlyPoolAddresses(config, rendered.text);
        if (config.keepalived.interface === "eth0" && SAMPLE.length < 12 && vips.length > 0) {
          SAMPLE.push(rendered.text);
        }
      }
    }),
    { numRuns: RUNS.inventories, seed: 9004 },
  );
  report(
    `fuzz: ${RUNS.inventories} inventories with generated Services and Nodes: ${accepted} ` +
      `accepted by check, ${renders} keepalived files rendered, all in the grammar and the pools`,
  );
  assert.ok(accepted > RUNS.inventories / 20, `too few accepted inventories (${accepted})`);
});

Deno.test("property: a sample of the rendered files passes keepalived -t", async () => {
  const keepalived = requireTool("keepalived");
  const ipPath = requireTool("ip");
  requireRoot("keepalived -t on the sample");
  assert.ok(SAMPLE.length > 0, "no rendered file to check (the previous property ran first)");
  const ns = `kt${Deno.pid % 100000}fz`;
  const dir = await Deno.makeTempDir({ prefix: "keelson-fuzz-" });
  const ip = (...args: string[]) =>
    new Deno.Command(ipPath, { args, stdout: "null", stderr: "piped" }).output();
  try {
    assert.ok((await ip("netns", "add", ns)).success, `cannot create namespace ${ns}`);
    assert.ok(
      (await ip("-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", "eth1")).success,
    );
    assert.ok((await ip("-n", ns, "link", "set", "eth0", "up")).success);
    for (const [i, text] of SAMPLE.entries()) {
      const file = `${dir}/k${i}.conf`;
      await Deno.writeTextFile(file, text);
      const check = await new Deno.Command(ipPath, {
        args: ["netns", "exec", ns, keepalived, "-t", "-f", file],
        stdout: "piped",
        stderr: "piped",
      }).output();
      const said = new TextDecoder().decode(check.stderr) + new TextDecoder().decode(check.stdout);
      assert.equal(check.code, 0, `keepalived -t refused:\n${said}\n${text}`);
    }
    report(`fuzz: keepalived -t accepted all ${SAMPLE.length} sampled files`);
  } finally {
    await ip("netns", "del", ns);
    await Deno.remove(dir, { recursive: true });
  }
});
