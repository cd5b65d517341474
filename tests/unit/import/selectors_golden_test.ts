/**
 * Never widen: a MetalLB restriction Keelson cannot express (namespace selectors, an
 * advertisement's node or Service selectors) keeps the pool as narrow as Keelson can write it
 * (auto_assign = false when no namespace list is left) and is reported, one sentence each, for
 * the command to print on stderr and exit 1.
 */
import assert from "node:assert/strict";
import { parse } from "smol-toml";
import { importMetallb } from "../../../src/import/metallb.ts";
import { golden, readData } from "./_golden.ts";

Deno.test("import metallb: selectors Keelson cannot express narrow the pool and are reported", async () => {
  const lost: string[] = [];
  const text = importMetallb(await readData("real/selectors.yaml"), {
    source: "selectors.yaml",
    restrictionsLost: lost,
  });
  await golden("real/selectors.expected.toml", text);
  const doc = parse(text) as {
    pools: { name: string; auto_assign: boolean; service_allocation?: { namespaces?: string[] } }[];
  };
  const tenants = doc.pools.find((p) => p.name === "tenants")!;
  // offered to no namespace automatically, rather than first to every namespace
  assert.equal(tenants.auto_assign, false);
  const shared = doc.pools.find((p) => p.name === "shared")!;
  assert.equal(shared.auto_assign, true);
  assert.deepEqual(shared.service_allocation?.namespaces, ["shop"]);
  // rack-a's nodeSelectors (rack=a) became [pools.served_by] labels: nothing lost there
  assert.equal(lost.length, 3, lost.join("\n"));
  assert.ok(!lost.some((l) => /spec\.nodeSelectors/.test(l)));
  const rackA = doc.pools.find((p) => p.name === "tenants") as { served_by?: unknown };
  assert.deepEqual(JSON.parse(JSON.stringify(rackA.served_by)), { labels: { rack: "a" } });
  assert.ok(
    lost.some((l) =>
      /"tenants" spec\.serviceAllocation\.namespaceSelectors \(tenant=gold\).*auto_assign = false/
        .test(l)
    ),
  );
  assert.ok(
    lost.some((l) => /"shared" .*namespaceSelectors.*only to the namespaces listed/.test(l)),
  );
  assert.ok(lost.some((l) => /spec\.serviceSelectors \(exposed=yes\)/.test(l)));
});

Deno.test("import metallb: a BGPPeer's nodeSelectors unresolved without Nodes leave the peer out", () => {
  const lost: string[] = [];
  const text = importMetallb(
    JSON.stringify({
      kind: "List",
      items: [
        {
          apiVersion: "metallb.io/v1beta1",
          kind: "IPAddressPool",
          metadata: { name: "p" },
          spec: { addresses: ["192.0.2.0/28"] },
        },
        { apiVersion: "metallb.io/v1beta1", kind: "BGPAdvertisement", metadata: { name: "a" } },
        {
          apiVersion: "metallb.io/v1beta2",
          kind: "BGPPeer",
          metadata: { name: "r1" },
          spec: {
            myASN: 64513,
            peerASN: 64512,
            peerAddress: "10.0.0.1",
            nodeSelectors: [{ matchLabels: { rack: "a" } }],
          },
        },
      ],
    }),
    { source: "x.json", restrictionsLost: lost },
  );
  assert.equal((parse(text) as { bgp: { peers?: unknown[] } }).bgp.peers, undefined);
  assert.match(text, /^# \[\[bgp\.peers\]\]$/m);
  assert.equal(lost.length, 1);
  assert.match(lost[0]!, /BGPPeer "r1" spec\.nodeSelectors \(rack=a\) cannot be resolved/);
});
