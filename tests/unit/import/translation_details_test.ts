/**
 * Single decisions of the translations, each on a small input: v1beta1's "0s" timers, iBGP by
 * `dynamicASN: internal`, a peer Keelson cannot take as written, kube-vip's keys.
 */
import assert from "node:assert/strict";
import { parse } from "smol-toml";
import { importKubeVip, KUBE_VIP_KEYS } from "../../../src/import/kube_vip.ts";
import { importMetallb } from "../../../src/import/metallb.ts";

const list = (...items: unknown[]) => JSON.stringify({ apiVersion: "v1", kind: "List", items });
const pool = {
  apiVersion: "metallb.io/v1beta1",
  kind: "IPAddressPool",
  metadata: { name: "p" },
  spec: { addresses: ["192.0.2.0/28"] },
};
const bgpAd = {
  apiVersion: "metallb.io/v1beta1",
  kind: "BGPAdvertisement",
  metadata: { name: "a" },
  spec: {},
};
const peer = (apiVersion: string, spec: Record<string, unknown>) => ({
  apiVersion,
  kind: "BGPPeer",
  metadata: { name: "r1" },
  spec: { myASN: 64513, peerAddress: "10.0.0.1", ...spec },
});
type Doc = {
  bgp?: { asn: number; peers?: Record<string, unknown>[] };
  pools: { announce: string }[];
};

Deno.test('metallb v1beta1 BGPPeer: the "0s" timers the API prints for unset ones stay unset', () => {
  const text = importMetallb(
    list(
      pool,
      bgpAd,
      peer("metallb.io/v1beta1", { peerASN: 64512, holdTime: "0s", keepaliveTime: "0s" }),
    ),
    { source: "x" },
  );
  const doc = parse(text) as Doc;
  assert.equal(doc.bgp!.peers![0]!.hold_time, undefined);
  assert.match(text, /left this peer's holdTime and keepaliveTime to its BGP daemon/);
  // in v1beta2 a 0s hold time is set on purpose: keepalives off, which Keelson cannot do
  const v2 = importMetallb(
    list(pool, bgpAd, peer("metallb.io/v1beta2", { peerASN: 64512, holdTime: "0s" })),
    {
      source: "x",
    },
  );
  assert.match(v2, /spec\.holdTime = "0s": 0 turns keepalives off/);
});

Deno.test("metallb: timers in Go's duration form, one derived from the other as MetalLB does", () => {
  const doc = parse(importMetallb(
    list(pool, bgpAd, peer("metallb.io/v1beta2", { peerASN: 64512, holdTime: "1m30s" })),
    { source: "x" },
  )) as Doc;
  assert.equal(doc.bgp!.peers![0]!.hold_time, 90);
  assert.equal(doc.bgp!.peers![0]!.keepalive_time, 30);
  assert.equal(doc.pools[0]!.announce, "bgp");
});

Deno.test("metallb: dynamicASN internal is the hosts' ASN; a peer without any ASN is left commented", () => {
  const internal = parse(importMetallb(
    list(pool, bgpAd, peer("metallb.io/v1beta2", { dynamicASN: "internal" })),
    { source: "x" },
  )) as Doc;
  assert.equal(internal.bgp!.peers![0]!.asn, 64513);
  const none = importMetallb(list(pool, bgpAd, peer("metallb.io/v1beta2", {})), { source: "x" });
  assert.equal((parse(none) as Doc).bgp!.peers, undefined);
  assert.match(
    none,
    /no spec\.peerASN; write the peer's AS number and uncomment\.\n(# .*\n)*# \[\[bgp\.peers\]\]\n# name = "r1"/,
  );
});

Deno.test("metallb: communities and BFD profiles with no BGP to use them are named, not dropped", () => {
  const text = importMetallb(
    list(
      pool,
      {
        apiVersion: "metallb.io/v1beta1",
        kind: "Community",
        metadata: { name: "c" },
        spec: { communities: [{ name: "x", value: "1:2" }] },
      },
      { apiVersion: "metallb.io/v1beta1", kind: "BFDProfile", metadata: { name: "b" }, spec: {} },
      {
        apiVersion: "metallb.io/v1beta1",
        kind: "L2Advertisement",
        metadata: { name: "l2" },
        spec: { ipAddressPools: ["gone"] },
      },
    ),
    { source: "x" },
  );
  assert.match(text, /MetalLB Community "c": unused/);
  assert.match(text, /MetalLB BFDProfile "b": unused/);
  assert.match(text, /MetalLB L2Advertisement "l2" selects no IPAddressPool/);
  assert.match(text, /announced this pool nowhere/);
});

Deno.test("kube-vip: the fixture holds every documented key, and the output answers each", async () => {
  const source = await Deno.readTextFile(new URL("./testdata/kubevip.yaml", import.meta.url));
  const text = importKubeVip(source, { source: "kubevip.yaml" });
  for (const key of Object.keys(KUBE_VIP_KEYS)) {
    const pattern = new RegExp(`^  ${key.replace("<namespace>", "(?!global)[a-z0-9-]+")}:`, "m");
    assert.match(source, pattern, `the fixture lacks ${key}`);
    const shown = key.replace("<namespace>", "");
    assert.ok(text.includes(shown), `the output never mentions ${key}`);
  }
});
