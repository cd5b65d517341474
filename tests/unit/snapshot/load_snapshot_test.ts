import assert from "node:assert/strict";
import { loadSnapshot, parseSnapshot } from "../../../src/snapshot/load_snapshot.ts";

Deno.test("parseSnapshot reads a kubectl List of mixed kinds", () => {
  const text = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: cp-1}
- apiVersion: v1
  kind: Service
  metadata: {name: web, namespace: default}
- apiVersion: v1
  kind: PersistentVolume
  metadata: {name: pv-1}
- apiVersion: v1
  kind: Pod
  metadata: {name: ignored}
`;
  const snapshot = parseSnapshot(text, "state.yaml");
  assert.deepEqual(snapshot.nodes.map((n) => n.metadata?.name), ["cp-1"]);
  assert.deepEqual(snapshot.services.map((s) => s.metadata?.name), ["web"]);
  assert.deepEqual(snapshot.persistentVolumes.map((p) => p.metadata?.name), ["pv-1"]);
});

Deno.test("parseSnapshot reads JSON NodeList items without a kind", () => {
  const text = JSON.stringify({ kind: "NodeList", items: [{ metadata: { name: "w-1" } }] });
  assert.equal(parseSnapshot(text, "s.json").nodes[0]?.metadata?.name, "w-1");
});

Deno.test("parseSnapshot reads multi-document YAML and a single object", () => {
  const text = "kind: Node\nmetadata: {name: a}\n---\nkind: Node\nmetadata: {name: b}\n";
  assert.equal(parseSnapshot(text, "s.yaml").nodes.length, 2);
  assert.equal(parseSnapshot("kind: Node\nmetadata: {name: a}\n", "s.yaml").nodes.length, 1);
});

Deno.test("parseSnapshot names the file and item index of a broken item", () => {
  const text =
    "kind: List\nitems:\n- kind: Node\n  metadata: {name: a}\n- kind: Node\n  metadata: {}\n";
  assert.throws(
    () => parseSnapshot(text, "state.yaml"),
    /Cannot read cluster state state\.yaml item 1: metadata\.name is missing/,
  );
});

Deno.test("parseSnapshot names the file on a YAML syntax error", () => {
  assert.throws(() => parseSnapshot("kind: [Node\n", "bad.yaml"), /bad\.yaml/);
});

Deno.test("loadSnapshot names a missing file", async () => {
  await assert.rejects(loadSnapshot("/nonexistent/state.yaml"), /\/nonexistent\/state\.yaml/);
});

Deno.test("parseSnapshot reads the null times the API server writes for unset ones", () => {
  // kube-apiserver serializes an unset metav1.Time as null (kubectl prints `lastHeartbeatTime: null`)
  const text = JSON.stringify({
    kind: "NodeList",
    items: [{
      metadata: { name: "n-1", creationTimestamp: "2026-01-01T00:00:00Z" },
      spec: { taints: [{ key: "k", effect: "NoSchedule", timeAdded: null }] },
      status: {
        conditions: [{
          type: "Ready",
          status: "False",
          lastHeartbeatTime: null,
          lastTransitionTime: null,
        }],
      },
    }],
  });
  assert.equal(parseSnapshot(text, "s.json").nodes.length, 1);
});
