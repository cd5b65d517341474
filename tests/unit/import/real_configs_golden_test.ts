/**
 * Golden tests of configurations as real clusters run them: MetalLB objects without the ones
 * they refer to, MetalLB before 0.13 (the `config` ConfigMap) and 0.13's AddressPool, and
 * kube-vip-cloud-provider's lookup rules. Each input is in testdata/real/ with the inventory it
 * must produce (or the refusal it must get).
 */
import assert from "node:assert/strict";
import { parse } from "smol-toml";
import { inventoryIssues } from "../../../src/import/check_output.ts";
import { importKubeVip } from "../../../src/import/kube_vip.ts";
import { importMetallb } from "../../../src/import/metallb.ts";
import { metallbEntry } from "../../../src/import/metallb_pools.ts";
import { ImportError } from "../../../src/import/source_objects.ts";
import { buggy, enumerate, keelsonSet, sameSet } from "./_address_sets.ts";
import { golden, readData } from "./_golden.ts";

Deno.test("import metallb: a file of advertisements, Communities and BFDProfiles says what it holds", async () => {
  const text = await readData("real/advertisements_only.yaml");
  assert.throws(
    () => importMetallb(text, { source: "ads.yaml" }),
    (error: unknown) =>
      error instanceof ImportError &&
      /^ads\.yaml: holds no MetalLB IPAddressPool or BGPPeer \(it holds 1 L2Advertisement, 1 BGPAdvertisement, 1 Community, 1 BFDProfile\)/
        .test(error.message) &&
      /addresspools/.test(error.message) &&
      /configmap config -n metallb-system/.test(error.message),
  );
});

Deno.test("import metallb: an advertisement's communities and localPref are kept without a BGPPeer", async () => {
  const text = importMetallb(await readData("real/advertisement_no_peer.yaml"), {
    source: "advertisement_no_peer.yaml",
  });
  await golden("real/advertisement_no_peer.expected.toml", text);
  assert.match(text, /spec\.communities = \["no-export","64512:100"\]: tagged the routes/);
  assert.match(text, /spec\.localPref = 150: sent with the routes of pool "anycast"/);
  const doc = parse(text) as { bgp: { communities?: Record<string, string> } };
  assert.deepEqual({ ...doc.bgp.communities }, { "no-export": "65535:65281" });
});

/** MetalLB's usable addresses of one entry list: every address, minus .0/.255 when avoided. */
function metallbSet(addresses: string[], avoidBuggyIPs: boolean): Set<string> {
  const out = new Set<string>();
  for (const entry of addresses) {
    const i = metallbEntry(entry)!;
    enumerate(i.family, i.first, i.last, out);
  }
  if (avoidBuggyIPs) { for (const k of [...out]) if (buggy(k)) out.delete(k); }
  return out;
}

type Inventory = {
  bgp?: { asn?: number; communities?: Record<string, string>; peers?: Record<string, unknown>[] };
  pools: { name: string; auto_assign: boolean; announce: string }[];
};

for (const input of ["metallb_0.12_configmap.yaml", "metallb_0.12_config_body.yaml"]) {
  Deno.test(`import metallb: MetalLB 0.12's config (${input}) with BGP and L2 pools`, async () => {
    const lost: string[] = [];
    const text = importMetallb(await readData(`real/${input}`), {
      source: input,
      restrictionsLost: lost,
    });
    await golden(`real/${input.replace(/\.yaml$/, ".expected.toml")}`, text);
    assert.deepEqual(lost, []);
    const doc = parse(text) as Inventory;
    assert.deepEqual(
      doc.pools.map((p) => [p.name, p.announce, p.auto_assign]),
      [["bgp-public", "bgp", true], ["bgp-internal", "bgp", true], ["l2-office", "vrrp", false]],
    );
    sameSet(keelsonSet(text, "bgp-public"), metallbSet(["198.51.100.0/24"], false), "bgp-public");
    sameSet(
      keelsonSet(text, "bgp-internal"),
      metallbSet(["10.50.0.10-10.50.0.20"], false),
      "bgp-internal",
    );
    sameSet(keelsonSet(text, "l2-office"), metallbSet(["192.168.10.0/23"], true), "l2-office");
    assert.equal(doc.bgp!.asn, 64500);
    // MetalLB's default hold time for a peer that sets none (90 s, keepalive a third)
    const [peer1, peer2] = doc.bgp!.peers!;
    assert.deepEqual([peer1!.name, peer1!.hold_time, peer1!.keepalive_time], ["peer1", 90, 30]);
    assert.deepEqual([peer2!.name, peer2!.hold_time], ["peer2", 30]);
    // one advertisement of bgp-public sets localpref 100, the other none: Keelson has one per
    // peer, so it is a comment at each peer rather than a value MetalLB did not send everywhere
    assert.equal(peer2!.local_preference, undefined);
    assert.match(text, /spec\.localPref = 100, 0 toward this peer/);
    assert.deepEqual({ ...doc.bgp!.communities }, { "no-advertise": "65535:65282" });
    assert.match(text, /BGPAdvertisement "bgpadvertisement2" spec\.aggregationLength = 24/);
    assert.deepEqual(
      await inventoryIssues(text, input).then((i) => i.filter((x) => !/machines/.test(x.message))),
      [],
    );
  });
}

Deno.test("import metallb: MetalLB 0.13's AddressPool (BGP IPv4 /24 and IPv6 /124, layer2)", async () => {
  const input = "metallb_0.13_addresspool.yaml";
  const text = importMetallb(await readData(`real/${input}`), { source: input });
  await golden("real/metallb_0.13_addresspool.expected.toml", text);
  const doc = parse(text) as Inventory;
  assert.deepEqual(doc.pools.map((p) => [p.name, p.announce]), [["dual", "bgp"], ["lab", "vrrp"]]);
  sameSet(
    keelsonSet(text, "dual"),
    metallbSet(["203.0.113.0/24", "2001:db8:5::/124"], true),
    "dual",
  );
  sameSet(keelsonSet(text, "lab"), metallbSet(["192.168.20.10-192.168.20.19"], false), "lab");
  // the iBGP peer gets the advertisement's local preference and community
  const [tor] = doc.bgp!.peers!;
  assert.deepEqual([tor!.local_preference, tor!.communities], [200, ["64500:10"]]);
  assert.doesNotMatch(text, /Not read/);
});

Deno.test("import metallb: a pre-0.13 config problem names the line inside the ConfigMap", () => {
  const text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config\ndata:\n  config: |\n" +
    "    address-pools:\n    - name: a\n      protocol: arp\n      addresses: [10.0.0.0/30]\n";
  assert.throws(
    () => importMetallb(text, { source: "cm.yaml" }),
    /^ImportError: cm\.yaml:6 data\.config:3: MetalLB config address-pools\[0\] \("a"\) protocol: "arp" is not bgp or layer2/,
  );
});

// ------------------------------------------------------------------ kube-vip-cloud-provider

const kubevip = (data: Record<string, string>) =>
  JSON.stringify({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "kubevip", namespace: "kube-system" },
    data,
  });
const v4 = (from: string, to: string) => {
  const out = new Set<string>();
  const [a, b] = [metallbEntry(`${from}/32`)!, metallbEntry(`${to}/32`)!];
  enumerate(4, a.first, b.last, out);
  for (const k of [...out]) if (buggy(k)) out.delete(k);
  return out;
};
const poolNames = (text: string) => (parse(text) as Inventory).pools.map((p) => p.name);

Deno.test("import kube-vip: CIDR or range is decided by the value, whatever the key says", () => {
  const asRange = importKubeVip(kubevip({ "cidr-global": "192.168.1.200-192.168.1.220" }), {
    source: "k.json",
  });
  sameSet(keelsonSet(asRange, "global"), v4("192.168.1.200", "192.168.1.220"), "cidr-global");
  const asCidr = importKubeVip(kubevip({ "range-global": "10.0.0.0/29" }), { source: "k.json" });
  // 10.0.0.0 ends in .0: never handed out
  sameSet(keelsonSet(asCidr, "global"), v4("10.0.0.1", "10.0.0.7"), "range-global");
});

Deno.test("import kube-vip: lookup order cidr-NS, cidr-global, range-NS, range-global", async () => {
  // cidr-global shadows range-development: development's Services take the global pool
  const shadowed = importKubeVip(
    kubevip({ "cidr-global": "10.1.0.0/24", "range-development": "10.1.0.10-10.1.0.20" }),
    { source: "k.json" },
  );
  assert.deepEqual(poolNames(shadowed), ["global"]);
  assert.match(
    shadowed,
    /range-development = "10\.1\.0\.10-10\.1\.0\.20": never used, as kube-vip finds cidr-global/,
  );
  // range-development before range-global
  const own = importKubeVip(
    kubevip({ "range-global": "10.2.0.1-10.2.0.9", "range-development": "10.2.1.1-10.2.1.9" }),
    { source: "k.json" },
  );
  assert.deepEqual(poolNames(own), ["global", "development"]);
  sameSet(keelsonSet(own, "development"), v4("10.2.1.1", "10.2.1.9"), "development");
  // cidr-development before cidr-global, and range-global never read when cidr-global exists
  const text = importKubeVip(await readData("real/kubevip_lookup.yaml"), {
    source: "kubevip_lookup.yaml",
  });
  await golden("real/kubevip_lookup.expected.toml", text);
  assert.deepEqual(poolNames(text), ["global", "development", "finance"]);
  sameSet(keelsonSet(text, "development"), v4("192.168.0.209", "192.168.0.222"), "development");
  assert.match(text, /range-global = "192\.168\.5\.1-192\.168\.5\.9": never used/);
  assert.match(text, /range-staging = .*never used, as kube-vip finds cidr-global/);
});

Deno.test("import kube-vip: allow-share-global is every namespace's fallback", () => {
  const text = importKubeVip(
    kubevip({
      "cidr-global": "10.3.0.0/28",
      "allow-share-global": "true",
      "cidr-team": "10.3.1.0/28",
    }),
    { source: "k.json" },
  );
  assert.match(
    text,
    /kube-vip allow-share-global = "true": kube-vip put Services with disjoint ports/,
  );
  assert.match(text, /allow-share-global = "true" \(no allow-share-team, so the global setting\)/);
  // kube-vip reads it with strconv.ParseBool: "1" and "T" are true too
  const one = importKubeVip(kubevip({ "cidr-global": "10.3.0.0/28", "allow-share-global": "1" }), {
    source: "k.json",
  });
  assert.match(one, /allow-share-global = "1": kube-vip put Services with disjoint ports/);
  // without a pool of its own, the global setting is still named
  const alone = importKubeVip(
    kubevip({ "cidr-team": "10.3.1.0/28", "allow-share-global": "true" }),
    { source: "k.json" },
  );
  assert.match(alone, /allow-share-global = "true" \(no allow-share-team, so the global setting\)/);
});

Deno.test("import kube-vip: overlapping pools are refused, naming the overlap and what to do", () => {
  assert.throws(
    () =>
      importKubeVip(kubevip({ "cidr-global": "10.4.0.0/24", "cidr-dev": "10.4.0.64/28" }), {
        source: "k.json",
      }),
    /cidr-global and cidr-dev share 10\.4\.0\.64-10\.4\.0\.79: kube-vip counts the addresses in use per namespace.*give each namespace addresses of its own/,
  );
  assert.throws(
    () =>
      importKubeVip(
        kubevip({ "range-a": "10.5.0.1-10.5.0.20", "range-b": "10.5.0.15-10.5.0.30" }),
        { source: "k.json" },
      ),
    /range-a and range-b share 10\.5\.0\.15-10\.5\.0\.20/,
  );
});

Deno.test("import kube-vip: comma lists split as kube-vip splits them (no spaces trimmed)", () => {
  const text = importKubeVip(
    kubevip({ "range-global": "10.6.0.1-10.6.0.3,10.6.0.9-10.6.0.5,10.6.0.20-10.6.0.21" }),
    { source: "k.json" },
  );
  // the backwards range adds nothing, as netipx drops it
  const expected = v4("10.6.0.1", "10.6.0.3");
  for (const k of v4("10.6.0.20", "10.6.0.21")) expected.add(k);
  sameSet(keelsonSet(text, "global"), expected, "range-global");
  assert.match(text, /entry "10\.6\.0\.9-10\.6\.0\.5": its first address is after its last/);
  assert.throws(
    () =>
      importKubeVip(kubevip({ "cidr-global": "10.6.0.0/28, 10.6.1.0/28" }), { source: "k.json" }),
    /cidr-global: " 10\.6\.1\.0\/28" is not a CIDR .*kube-vip could not parse this value either/,
  );
});

Deno.test("import metallb: 0.12's config text as JSON, and another program's config ConfigMap left alone", () => {
  const body = JSON.stringify({
    "address-pools": [{ name: "p", protocol: "layer2", addresses: ["10.7.0.1-10.7.0.9"] }],
  });
  const text = importMetallb(body, { source: "config.json" });
  sameSet(keelsonSet(text, "p"), metallbSet(["10.7.0.1-10.7.0.9"], false), "p");
  const other = JSON.stringify({
    kind: "List",
    items: [
      {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "config", namespace: "web" },
        data: { config: "listen: 8080\n" },
      },
      {
        apiVersion: "metallb.io/v1beta1",
        kind: "IPAddressPool",
        metadata: { name: "q" },
        spec: { addresses: ["10.7.1.0/30"] },
      },
    ],
  });
  assert.match(
    importMetallb(other, { source: "all.json" }),
    /Not read \(no Keelson equivalent, or not MetalLB configuration\): 1 ConfigMap \(v1\)/,
  );
});

Deno.test("import metallb: a YAML error inside 0.12's config names its line", () => {
  const text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config\ndata:\n  config: |\n" +
    "    address-pools:\n    - name: a\n      addresses: [10.0.0.0/30\n";
  assert.throws(
    () => importMetallb(text, { source: "cm.yaml" }),
    /^ImportError: cm\.yaml:6 data\.config:\d+: cannot parse YAML/,
  );
});
