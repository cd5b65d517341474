/**
 * MetalLB's node selectors become `[pools.served_by]`: by hostname, by role (the workers-only
 * configuration), by an ordinary label (written into the machines when the Nodes are known),
 * through the peers when the advertisement selects every Node; what keys cannot say is resolved
 * against the Nodes, or reported when they were not read.
 */
import assert from "node:assert/strict";
import type { V1Node } from "@kubernetes/client-node";
import { parse as parseToml } from "smol-toml";
import { parse as parseYaml } from "yaml";
import { inventoryIssues } from "../../../src/import/check_output.ts";
import { importMetallb } from "../../../src/import/metallb.ts";
import { nodeSelection } from "../../../src/import/node_selectors.ts";
import { importedMachines } from "../../../src/import/machines.ts";
import type { MetallbSelector } from "../../../src/import/metallb_schema.ts";
import { golden, readData } from "./_golden.ts";

const nodes = async () =>
  (parseYaml(await readData("node_selectors/nodes.yaml")) as { items: V1Node[] }).items;

interface Doc {
  pools: { name: string; served_by?: Record<string, unknown> }[];
  machines?: { name: string; labels?: Record<string, string> }[];
}

/** smol-toml's tables have no prototype; compare plain values. */
const plain = (value: unknown) => JSON.parse(JSON.stringify(value ?? null));
const servedBy = (doc: Doc, pool: string) =>
  plain(doc.pools.find((p) => p.name === pool)!.served_by);

Deno.test("import metallb: node selectors without the Nodes become served_by keys, the rest is reported", async () => {
  const lost: string[] = [];
  const text = importMetallb(await readData("node_selectors/metallb.yaml"), {
    source: "metallb.yaml",
    restrictionsLost: lost,
  });
  await golden("node_selectors/metallb.expected.toml", text);
  const doc = parseToml(text) as unknown as Doc;
  assert.deepEqual(servedBy(doc, "by-hostname"), { machines: ["w-1", "w-2"] });
  assert.deepEqual(servedBy(doc, "workers-only"), { roles: ["worker"] });
  assert.deepEqual(servedBy(doc, "edge"), { labels: { "example.com/edge": "true" } });
  assert.equal(servedBy(doc, "control-plane"), null, "the default needs no table");
  // NotIn has no served_by key: the pool keeps the default and the restriction is reported
  assert.equal(servedBy(doc, "not-rack-3"), null);
  assert.equal(lost.length, 1, lost.join("\n"));
  assert.match(
    lost[0]!,
    /^metallb\.yaml:\d+: L2Advertisement "not-rack-3" spec\.nodeSelectors \(rack notin \(r3\),!node-role\.kubernetes\.io\/control-plane\): "rack" NotIn has no served_by equivalent; import with --kubeconfig/,
  );
});

Deno.test("import metallb: with the Nodes, node selectors resolve and the inventory passes check", async () => {
  const lost: string[] = [];
  const text = importMetallb(await readData("node_selectors/metallb.yaml"), {
    source: "metallb.yaml",
    nodes: await nodes(),
    restrictionsLost: lost,
  });
  await golden("node_selectors/metallb_nodes.expected.toml", text);
  assert.deepEqual(lost, []);
  const doc = parseToml(text) as unknown as Doc;
  assert.deepEqual(servedBy(doc, "by-hostname"), { machines: ["w-1", "w-2"] });
  assert.deepEqual(servedBy(doc, "workers-only"), { roles: ["worker"] });
  assert.deepEqual(servedBy(doc, "edge"), { labels: { "example.com/edge": "true" } });
  // resolved: w-3 is in rack r3, the control-plane Nodes are excluded by the selector
  assert.deepEqual(servedBy(doc, "not-rack-3"), { machines: ["w-1", "w-2"] });
  assert.equal(servedBy(doc, "control-plane"), null);
  // the label served_by selects by is written into exactly the machines whose Nodes carry it
  const labelled = doc.machines!.filter((m) => m.labels !== undefined).map((m) => m.name);
  assert.deepEqual(labelled, ["w-1", "w-2"]);
  assert.deepEqual(await inventoryIssues(text, "metallb_nodes.expected.toml"), []);
});

Deno.test("import metallb: peers that agree on their nodeSelectors choose the Nodes of a BGP pool whose advertisement selects every Node", async () => {
  const input = await readData("node_selectors/peers.yaml");
  const lost: string[] = [];
  const text = importMetallb(input, { source: "peers.yaml", restrictionsLost: lost });
  await golden("node_selectors/peers.expected.toml", text);
  const doc = parseToml(text) as unknown as Doc & { bgp: { peers?: unknown[] } };
  assert.deepEqual(servedBy(doc, "via-peers"), { labels: { "example.com/edge": "true" } });
  // the peers themselves cannot choose hosts by label: without the Nodes they wait, reported
  assert.equal(doc.bgp.peers, undefined);
  assert.equal(lost.length, 2, lost.join("\n"));

  const withNodes = importMetallb(input, { source: "peers.yaml", nodes: await nodes() });
  await golden("node_selectors/peers_nodes.expected.toml", withNodes);
  const resolved = parseToml(withNodes) as unknown as Doc & {
    bgp: { peers: { hosts?: string[] }[] };
  };
  assert.deepEqual(servedBy(resolved, "via-peers"), { labels: { "example.com/edge": "true" } });
  // the workers that serve the BGP pool run BIRD, so they are the peers' hosts
  assert.deepEqual(resolved.bgp.peers.map((p) => p.hosts), [["w-1", "w-2"], ["w-1", "w-2"]]);
});

Deno.test("nodeSelection: keys that resolve to a different set of Nodes fall back to the machines selected", () => {
  const machines = importedMachines([
    { metadata: { name: "cp-1", labels: { "node-role.kubernetes.io/control-plane": "" } } },
    { metadata: { name: "w-1", labels: { "node-role.kubernetes.io/worker": "" } } },
    { metadata: { name: "w-2", labels: {} } },
  ]);
  const worker = [{ matchLabels: { "node-role.kubernetes.io/worker": "" } }];
  // without Nodes, the worker role label reads as the worker role
  assert.deepEqual(nodeSelection([worker], []), {
    kind: "served_by",
    servedBy: { roles: ["worker"] },
    machineLabels: new Map(),
    note: "From spec.nodeSelectors (node-role.kubernetes.io/worker=).",
  });
  // with them, w-2 (a worker without the label) shows the role is wider: list the machines
  const resolved = nodeSelection([worker], machines);
  assert.equal(resolved.kind, "served_by");
  assert.deepEqual(resolved.kind === "served_by" && resolved.servedBy, { machines: ["w-1"] });
});

Deno.test("nodeSelection: every Node, the control plane exactly, nothing, and ORs over different keys", () => {
  const machines = importedMachines([
    { metadata: { name: "cp-1", labels: { "node-role.kubernetes.io/control-plane": "" } } },
    { metadata: { name: "w-1", labels: { rack: "a" } } },
  ]);
  assert.deepEqual(nodeSelection([[]], machines), { kind: "default" });
  assert.deepEqual(nodeSelection([], []), { kind: "default" });
  assert.deepEqual(
    nodeSelection([[{ matchLabels: { "kubernetes.io/hostname": "cp-1" } }]], machines),
    { kind: "default" },
  );
  const none = nodeSelection([[{ matchLabels: { rack: "z" } }]], machines);
  assert.equal(none.kind, "inexpressible");
  assert.match(none.kind === "inexpressible" ? none.reason : "", /selects no Node of the cluster/);
  const mixed: MetallbSelector[] = [{ matchLabels: { rack: "a" } }, {
    matchLabels: { "kubernetes.io/hostname": "x" },
  }];
  const unresolved = nodeSelection([mixed], []);
  assert.equal(unresolved.kind, "inexpressible");
  assert.match(
    unresolved.kind === "inexpressible" ? unresolved.reason : "",
    /ORed over different keys/,
  );
  // the Nodes resolve the OR into a list of machines
  const resolved = nodeSelection([mixed], machines);
  assert.deepEqual(resolved.kind === "served_by" && resolved.servedBy, { machines: ["w-1"] });
});

Deno.test("nodeSelection: values an inventory cannot hold are reasons, never written", () => {
  for (
    const selector of [
      { matchLabels: { "kubernetes.io/hostname": "Bad_Name" } },
      { matchLabels: { "bad key!": "x" } },
      { matchLabels: { rack: "a\nb" } },
      { matchLabels: { "topology.kubernetes.io/zone": "z1" } },
      { matchExpressions: [{ key: "rack", operator: "In" as const, values: ["a", "b"] }] },
      { matchExpressions: [{ key: "rack", operator: "Exists" as const }] },
    ] as MetallbSelector[]
  ) {
    const result = nodeSelection([[selector]], []);
    assert.equal(result.kind, "inexpressible", JSON.stringify(selector));
  }
});
