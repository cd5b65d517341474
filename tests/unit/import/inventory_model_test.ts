/**
 * The importer's model and its one writer apart: what MetalLB's objects become as fragments
 * (keys, notes, a peer left out, a pool's serving machines, the restrictions lost), and how the
 * writer turns fragments into text.
 */
import assert from "node:assert/strict";
import { parse } from "smol-toml";
import type { InventoryFragments } from "../../../src/import/inventory_fragments.ts";
import { writeInventory } from "../../../src/import/inventory_writer.ts";
import { metallbInventory } from "../../../src/import/metallb.ts";
import { readMetallbObjects } from "../../../src/import/metallb_legacy.ts";
import { parseMetallb } from "../../../src/import/metallb_parsed.ts";

const METALLB = `
apiVersion: v1
kind: List
items:
- apiVersion: metallb.io/v1beta1
  kind: IPAddressPool
  metadata: { name: lan, namespace: metallb-system }
  spec: { addresses: [10.0.0.0/24] }
- apiVersion: metallb.io/v1beta1
  kind: BGPAdvertisement
  metadata: { name: to-tor, namespace: metallb-system }
  spec:
    ipAddressPools: [lan]
    nodeSelectors: [{ matchLabels: { rack: r1 } }]
- apiVersion: metallb.io/v1beta2
  kind: BGPPeer
  metadata: { name: tor-a, namespace: metallb-system }
  spec: { myASN: 64513, peerASN: 64512, peerAddress: 10.0.0.1, vrf: red }
- apiVersion: metallb.io/v1beta2
  kind: BGPPeer
  metadata: { name: tor-b, namespace: metallb-system }
  spec: { myASN: 64513, peerASN: 64512, interface: eth1 }
`;

function model(): ReturnType<typeof metallbInventory> {
  const { objects, converted } = readMetallbObjects(METALLB, "metallb.yaml");
  return metallbInventory(parseMetallb(objects), { source: "metallb.yaml", converted });
}

Deno.test("metallbInventory(): pools, peers and their notes are data, decided before any text", () => {
  const { inventory, restrictionsLost } = model();
  const pools = inventory.pools.filter((p) => "header" in p);
  assert.equal(pools.length, 1);
  const lan = pools[0]!;
  assert.equal(lan.name, "lan");
  // the advertisement's node selector becomes the pool's served_by (no Nodes read: the labels
  // are named for the operator to give the machines)
  assert.ok("servedBy" in lan.servingMachines);
  assert.deepEqual(lan.servingMachines.servedBy, { labels: { rack: "r1" } });
  assert.match(lan.servingMachines.note.text, /^From spec\.nodeSelectors \(rack=r1\)\. Give the/);
  assert.equal(lan.servingMachines.machineLabels.size, 0);
  assert.deepEqual(
    lan.entries.flatMap((e) => "key" in e ? [[e.key, e.value]] : []),
    [["name", "lan"], ["addresses", ["10.0.0.0-10.0.0.255"]], ["auto_assign", true], [
      "announce",
      "bgp",
    ]],
  );
  // kept as served_by: neither a note on the pool nor a restriction lost
  assert.ok(!lan.entries.some((e) => "note" in e && e.note.text.includes("spec.nodeSelectors")));
  assert.deepEqual(restrictionsLost, []);

  const peers = inventory.settings.filter((b) => "header" in b && b.header === "[[bgp.peers]]");
  assert.equal(peers.length, 2);
  const [a, b] = peers as [
    Extract<typeof peers[number], { header: string }>,
    Extract<typeof peers[number], { header: string }>,
  ];
  assert.equal(a.leftOut, undefined);
  assert.ok(a.notes.some((n) => n.text.startsWith('MetalLB BGPPeer "tor-a" spec.vrf = "red"')));
  assert.match(b.leftOut?.text ?? "", /spec\.interface = "eth1": an unnumbered session/);
});

Deno.test("writeInventory(): notes become comments, a left-out table is commented, served_by and allocation follow their pool", () => {
  const inventory: InventoryFragments = {
    header: [{ text: "Imported.\u001b[2J" }],
    settings: [
      {
        header: "[keepalived]",
        notes: [],
        entries: [{ note: { text: "Set the interface:", lines: ['# interface = "eth0"'] } }],
      },
      {
        header: "[[bgp.peers]]",
        notes: [{ text: "A note that stays a comment." }],
        entries: [{ key: "name", value: "tor" }, { note: { text: "inside" } }, {
          key: "asn",
          value: 64512,
        }],
        leftOut: { text: "Write its address, then uncomment:" },
      },
    ],
    pools: [
      { blankBefore: true, notes: [{ text: "Pools." }] },
      {
        header: "[[pools]]",
        name: "lan",
        notes: [],
        entries: [{ key: "name", value: "lan" }, { key: "addresses", value: ["10.0.0.0/24"] }],
        servingMachines: {
          servedBy: { roles: ["worker"], labels: { rack: "r1" } },
          note: { text: "From spec.nodeSelectors." },
          machineLabels: new Map(),
        },
        serviceAllocation: {
          header: "[pools.service_allocation]",
          notes: [],
          entries: [{ key: "namespaces", value: ["shop"] }],
        },
      },
    ],
    machines: [{ blankBefore: true, notes: [{ text: "Machines: add them." }] }],
  };
  const text = writeInventory(inventory);
  assert.equal(
    text,
    [
      "# Imported.\\x1b[2J",
      "",
      "[keepalived]",
      "# Set the interface:",
      '# interface = "eth0"',
      "",
      "# A note that stays a comment.",
      "# Write its address, then uncomment:",
      "# [[bgp.peers]]",
      '# name = "tor"',
      "# # inside",
      "# asn = 64512",
      "",
      "# Pools.",
      "",
      "[[pools]]",
      'name = "lan"',
      'addresses = ["10.0.0.0/24"]',
      "",
      "[pools.served_by]",
      "# From spec.nodeSelectors.",
      'roles = ["worker"]',
      'labels = { rack = "r1" }',
      "",
      "[pools.service_allocation]",
      'namespaces = ["shop"]',
      "",
      "# Machines: add them.",
      "",
    ].join("\n"),
  );
  assert.deepEqual(JSON.parse(JSON.stringify(parse(text))), {
    keepalived: {},
    pools: [{
      name: "lan",
      addresses: ["10.0.0.0/24"],
      served_by: { roles: ["worker"], labels: { rack: "r1" } },
      service_allocation: { namespaces: ["shop"] },
    }],
  });
});
