import assert from "node:assert/strict";
import { announcedVips, buildBirdModel } from "../../../../../providers/baremetal/bird/model.ts";
import type { V1Node } from "@kubernetes/client-node";
import {
  renderHostBird,
  serviceVipsInBirdFile,
} from "../../../../../providers/baremetal/bird/host_config.ts";
import { renderBirdConfig } from "../../../../../providers/baremetal/bird/render.ts";
import { bgpConfig, offGrammar } from "./_inventory.ts";
import { assertGolden } from "../../../../_support/golden.ts";

/**
 * Golden files of rendered BIRD configurations. Every `*.conf` here must also pass `bird -p`:
 * tests/integration/bird_accepts_test.ts checks them with BIRD, so this file needs no BIRD.
 */
const TESTDATA = new URL("./testdata/", import.meta.url);

const VIPS = ["198.51.100.1", "198.51.100.3", "192.0.2.3", "2001:db8:100::5", "10.0.0.10"];
/** A Node of the base inventory (matched by name) with its pod CIDRs and InternalIPs. */
function node(name: string, cidrs: string[], ips: string[]): V1Node {
  return {
    metadata: { name },
    spec: { podCIDRs: cidrs },
    status: { addresses: ips.map((address) => ({ type: "InternalIP", address })) },
  };
}

const NODES = [
  node("w-1", ["10.244.1.0/24", "fd00:244:1::/64"], ["10.0.0.21", "fd00::21"]),
  node("far", ["10.244.2.0/24"], ["10.0.7.21"]),
];

for (const host of ["cp-1", "cp-2", "cp-3"]) {
  Deno.test(`renderHostBird() matches the golden file of ${host}`, async () => {
    const config = await bgpConfig();
    const rendered = renderHostBird({
      config,
      host,
      serviceVips: VIPS,
      nodes: NODES,
      controlPlaneHealthy: true,
    });
    if ("error" in rendered) throw new Error(rendered.error);
    await assertGolden(new URL(`${host}.conf`, TESTDATA), rendered.text);
    assert.deepEqual(offGrammar(rendered.text), []);
  });
}

Deno.test("the model keeps only BGP-pool VIPs and never the control-plane VIP as a Service VIP", async () => {
  const config = await bgpConfig();
  const model = buildBirdModel({ config, host: "cp-1", serviceVips: VIPS });
  if ("error" in model) throw new Error(model.error);
  // 192.0.2.3 is in the VRRP pool: keepalived's; 10.0.0.10 is the control-plane VIP
  assert.deepEqual(announcedVips(model), ["198.51.100.1", "198.51.100.3", "2001:db8:100::5"]);
  assert.deepEqual(model.skipped.map((s) => s.value), ["10.0.0.10"]);
  // no control-plane route until the apiserver is ready
  assert.ok(!model.statics.some((s) => s.name.startsWith("keelson_cp")));
});

Deno.test("a draining host announces no Service VIPs but keeps its sessions", async () => {
  const config = await bgpConfig();
  const model = buildBirdModel({
    config,
    host: "cp-1",
    serviceVips: VIPS,
    announceServices: false,
  });
  if ("error" in model) throw new Error(model.error);
  assert.deepEqual(announcedVips(model), []);
  assert.equal(model.peers.length, 1);
  assert.deepEqual(model.peers[0]!.exports, []);
});

Deno.test("pod CIDRs go only to peers whose subnet holds the Node's IP; multihop peers get all", async () => {
  const config = await bgpConfig((t) =>
    t.replace("multihop = 2\n", "multihop = 2\npod_cidrs = true\n")
  );
  const cp1 = buildBirdModel({ config, host: "cp-1", serviceVips: [], nodes: NODES });
  const cp3 = buildBirdModel({ config, host: "cp-3", serviceVips: [], nodes: NODES });
  if ("error" in cp1 || "error" in cp3) throw new Error("model");
  assert.deepEqual(cp1.peers[0]!.exports, ["keelson_pods4_s0"]);
  assert.deepEqual(cp3.peers[0]!.exports, ["keelson_pods4_any", "keelson_pods6_any"]);
});

Deno.test("rendering is deterministic whatever the input order", async () => {
  const config = await bgpConfig();
  const a = renderHostBird({ config, host: "cp-1", serviceVips: VIPS, nodes: NODES });
  const b = renderHostBird({
    config,
    host: "cp-1",
    serviceVips: [...VIPS].reverse(),
    nodes: [...NODES].reverse(),
  });
  assert.ok(!("error" in a) && !("error" in b));
  assert.equal(a.text, b.text);
});

Deno.test("serviceVipsInBirdFile() reads back what was rendered", async () => {
  const config = await bgpConfig();
  const rendered = renderHostBird({ config, host: "cp-1", serviceVips: VIPS, nodes: NODES });
  if ("error" in rendered) throw new Error(rendered.error);
  assert.deepEqual(
    serviceVipsInBirdFile(rendered.text).sort(),
    ["198.51.100.1", "198.51.100.3", "2001:db8:100::5"],
  );
});

const HOSTILE = [
  "198.51.100.1/32 blackhole; }; protocol bgp evil { neighbor 192.0.2.66 as 1; }; #",
  '198.51.100.1"; include "/etc/shadow',
  "198.51.100.1\nprotocol kernel { }",
  "198.51.100.999",
  "198.51.100.1 ",
  "::ffff:198.51.100.1",
  "",
  "include",
];

Deno.test("hostile Service ingress values and Node fields never reach the BIRD file", async () => {
  const config = await bgpConfig();
  const rendered = renderHostBird({
    config,
    host: "cp-1",
    serviceVips: [...HOSTILE, "198.51.100.2"],
    nodes: [
      node('x"; }', ["10.244.9.0/24; }; protocol bgp evil {"], ["10.0.0.21"]),
      node("w-1", ["10.244.9.0/24; }"], ["10.0.0.21; }"]),
      node("far", ["10.244.9.1/24"], ["10.0.7.21"]),
      node("w-b", ["fd00:244::/64"], ["10.0.1.21"]),
    ],
    controlPlaneHealthy: true,
  });
  if ("error" in rendered) throw new Error(rendered.error);
  assert.deepEqual(offGrammar(rendered.text), []);
  assert.ok(!/evil|include|shadow|kernel \{/.test(rendered.text));
  // "::ffff:198.51.100.1" is the IPv4-mapped form of a pool address: re-printed as 198.51.100.1
  assert.deepEqual(serviceVipsInBirdFile(rendered.text), ["198.51.100.1", "198.51.100.2"]);
  assert.ok(!rendered.text.includes("10.244.9."));
  await assertGolden(new URL("hostile.conf", TESTDATA), rendered.text);
});

Deno.test("the renderer refuses hostile values even when a model carries them", async () => {
  const config = await bgpConfig();
  const model = buildBirdModel({ config, host: "cp-1", serviceVips: ["198.51.100.1"] });
  if ("error" in model) throw new Error(model.error);
  const peer = model.peers[0]!;
  const attempts = [
    { ...model, peers: [{ ...peer, password: 'x"; }; protocol bgp evil { #' }] },
    { ...model, peers: [{ ...peer, password: "k".repeat(81) }] },
    { ...model, peers: [{ ...peer, password: "a b" }] },
    { ...model, peers: [{ ...peer, label: 'tor"\nprotocol' }] },
    { ...model, peers: [{ ...peer, name: "keelson_peer_0 { }" }] },
    // peer protocol names are rendered quoted ('keelson_peer_<name>'): no quote may close them
    { ...model, peers: [{ ...peer, name: "keelson_peer_a' { }; protocol bgp 'x" }] },
    { ...model, peers: [{ ...peer, name: "keelson_peer_a\nprotocol" }] },
    { ...model, peers: [{ ...peer, name: `keelson_peer_${"a".repeat(33)}` }] },
    { ...model, peers: [{ ...peer, exports: ['keelson_cp4" || true || "'] }] },
    { ...model, peers: [{ ...peer, keepaliveS: 9, holdS: 9 }] },
    { ...model, peers: [{ ...peer, asn: 4294967296 }] },
    {
      ...model,
      peers: [{
        ...peer,
        communities: [{ kind: "standard" as const, values: [65536, 1] as [number, number] }],
      }],
    },
    { ...model, host: "cp-1; protocol" },
    {
      ...model,
      statics: [{
        name: "keelson_vips4_p1 { }",
        kind: "service" as const,
        pool: "bgp",
        family: 4 as const,
        routes: [],
      }],
    },
  ];
  for (const attempt of attempts) {
    assert.throws(() => renderBirdConfig(attempt), RangeError);
  }
});

Deno.test("a valid password is rendered (golden file); a peer without one is skipped", async () => {
  const config = await bgpConfig((t) =>
    t.replace("bfd = true\n", 'bfd = true\npassword_file = "/etc/keelson/tor-a.key"\n')
  );
  const without = buildBirdModel({ config, host: "cp-1", serviceVips: [] });
  if ("error" in without) throw new Error(without.error);
  assert.equal(without.peers.length, 0);
  assert.match(without.skipped[0]!.reason, /password file/);
  const password = "S3cr3t!#$%&'()*+,-./:;<=>?@[]^_`{|}~" + "k".repeat(44);
  assert.equal(password.length, 80);
  const rendered = renderHostBird({
    config,
    host: "cp-1",
    serviceVips: [],
    passwords: new Map([["/etc/keelson/tor-a.key", password]]),
  });
  if ("error" in rendered) throw new Error(rendered.error);
  assert.ok(rendered.text.includes(`password "${password}";`));
  assert.deepEqual(offGrammar(rendered.text), []);
  await assertGolden(new URL("password.conf", TESTDATA), rendered.text);
});

Deno.test("a host that is not a control-plane machine gets an error naming the ones that are", async () => {
  const config = await bgpConfig();
  const model = buildBirdModel({ config, host: "w-1", serviceVips: [] });
  assert.ok("error" in model);
  assert.match(model.error, /"cp-1", "cp-2", "cp-3"/);
});

Deno.test("random Service and Node values: every rendered line is in the grammar; a sample is kept as golden files", async () => {
  const config = await bgpConfig();
  // a small deterministic generator (no dependency): values near valid ones plus junk
  let seed = 0x5eed;
  const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0);
  const pick = <T>(list: readonly T[]): T => list[next() % list.length]!;
  const junk = ['"', ";", "}", "{", "\n", " ", "#", "/*", "'", "include", "\\", "%", "\u0000"];
  const mutate = (valid: string): string => {
    const at = next() % (valid.length + 1);
    return next() % 3 === 0 ? valid : valid.slice(0, at) + pick(junk) + valid.slice(at);
  };
  const sampled: string[] = [];
  for (let round = 0; round < 200; round++) {
    const vips = Array.from({ length: 5 }, () => mutate(`198.51.100.${next() % 16}`));
    const pods = Array.from(
      { length: 3 },
      (_, i) =>
        node(
          mutate(["w-1", "w-b", "far"][i]!),
          [mutate(`10.244.${next() % 256}.0/24`)],
          [mutate(`10.0.0.${next() % 256}`)],
        ),
    );
    const rendered = renderHostBird({
      config,
      host: pick(["cp-1", "cp-2", "cp-3"]),
      serviceVips: vips,
      nodes: pods,
      controlPlaneHealthy: next() % 2 === 0,
    });
    if ("error" in rendered) throw new Error(rendered.error);
    assert.deepEqual(offGrammar(rendered.text), [], `round ${round}`);
    if (round % 40 === 0) sampled.push(rendered.text);
  }
  for (const [i, text] of sampled.entries()) {
    await assertGolden(new URL(`random_${i}.conf`, TESTDATA), text);
  }
});

Deno.test("keepalived leaves BGP-pool VIPs and a BGP control-plane VIP to BIRD", async () => {
  const { buildKeepalivedModel } = await import(
    "../../../../../providers/baremetal/keepalived/model.ts"
  );
  const { servedServiceAddresses } = await import(
    "../../../../../providers/baremetal/keepalived/served_addresses.ts"
  );
  const config = await bgpConfig();
  const model = buildKeepalivedModel({ config, host: "cp-1", serviceVips: VIPS });
  if ("error" in model) throw new Error(model.error);
  const held = model.instances.flatMap((i) => [...i.vips, ...i.excludedVips]);
  assert.deepEqual(held.map((ip) => ip.value), [BigInt(0xc0000203)]); // 192.0.2.3 only
  assert.ok(!model.instances.some((i) => i.kind === "control-plane"));
  const services = ["198.51.100.1", "192.0.2.3"].map((ip, i) => ({
    metadata: { name: `s${i}`, namespace: "default" },
    spec: { type: "LoadBalancer" },
    status: { loadBalancer: { ingress: [{ ip }] } },
  }));
  assert.deepEqual(servedServiceAddresses(config, services).vips, ["192.0.2.3"]);
});

Deno.test("graceful restart on, a host ASN and source address override are rendered (golden file)", async () => {
  const config = await bgpConfig((t) =>
    t.replace("keepalive_time = 3\n", 'keepalive_time = 3\ngraceful_restart = "on"\n')
  );
  const rendered = renderHostBird({ config, host: "cp-2", serviceVips: VIPS });
  if ("error" in rendered) throw new Error(rendered.error);
  assert.match(rendered.text, /graceful restart on;\n {2}graceful restart time 30;/);
  assert.match(rendered.text, /local 10\.0\.0\.12 as 64514;/);
  assert.match(rendered.text, /router id 10\.255\.0\.2;/);
  assert.deepEqual(offGrammar(rendered.text), []);
  await assertGolden(new URL("graceful_restart.conf", TESTDATA), rendered.text);
});

Deno.test("pod CIDRs outside [cluster] cluster_cidr are never announced, each skipped with why", async () => {
  const config = await bgpConfig();
  const rendered = renderHostBird({
    config,
    host: "cp-1",
    serviceVips: [],
    nodes: [
      node("w-1", ["10.244.1.0/24"], ["10.0.0.21"]),
      node("w-b", ["0.0.0.0/1"], ["10.0.1.21"]),
      node("far", ["198.51.100.0/27"], ["10.0.7.21"]),
      node("cp-2", ["10.244.0.0/15"], ["10.0.0.12"]),
    ],
    controlPlaneHealthy: true,
  });
  if ("error" in rendered) throw new Error(rendered.error);
  assert.ok(rendered.text.includes("10.244.1.0/24"));
  for (const cidr of ["0.0.0.0/1", "198.51.100.0/27", "10.244.0.0/15"]) {
    assert.ok(!rendered.text.includes(cidr), `${cidr} rendered`);
  }
  assert.deepEqual(
    rendered.skipped.filter((s) => /cluster_cidr/.test(s.reason)).map((s) => s.value).sort(),
    ["0.0.0.0/1", "10.244.0.0/15", "198.51.100.0/27"],
  );
  assert.match(
    rendered.skipped.find((s) => s.value === "0.0.0.0/1")!.reason,
    /Node "w-b": its pod CIDR is outside \[cluster\] cluster_cidr \(10\.244\.0\.0\/16, fd00:244::\/32\)/,
  );
});
