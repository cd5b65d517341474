/**
 * Golden tests of `keelson import`: MetalLB's resources and kube-vip's ConfigMap (testdata/,
 * covering every field, mapped and unmapped) against the inventories they must produce, and each
 * produced inventory against `keelson check`'s validation.
 */
import assert from "node:assert/strict";
import type { V1Node } from "@kubernetes/client-node";
import { parse } from "yaml";
import { inventoryIssues } from "../../../src/import/check_output.ts";
import { importKubeVip } from "../../../src/import/kube_vip.ts";
import { importMetallb } from "../../../src/import/metallb.ts";

// KEELSON_UPDATE_GOLDEN=1 rewrites the golden files instead of comparing
const UPDATE = Deno.env.get("KEELSON_UPDATE_GOLDEN") === "1";
const DATA = new URL("./testdata/", import.meta.url);
const read = (name: string) => Deno.readTextFile(new URL(name, DATA));
const nodes = async () => (parse(await read("nodes.yaml")) as { items: V1Node[] }).items;

async function golden(name: string, text: string): Promise<void> {
  const url = new URL(name, DATA);
  if (UPDATE) await Deno.writeTextFile(url, text);
  assert.equal(text, await Deno.readTextFile(url), `${name} differs (KEELSON_UPDATE_GOLDEN=1)`);
}

const cases = [
  {
    golden: "metallb.expected.toml",
    run: async () => importMetallb(await read("metallb.yaml"), { source: "metallb.yaml" }),
  },
  {
    golden: "metallb_nodes.expected.toml",
    run: async () =>
      importMetallb(await read("metallb.yaml"), { source: "metallb.yaml", nodes: await nodes() }),
  },
  {
    golden: "kubevip.expected.toml",
    run: async () => importKubeVip(await read("kubevip.yaml"), { source: "kubevip.yaml" }),
  },
  {
    golden: "kubevip_nodes.expected.toml",
    run: async () =>
      importKubeVip(await read("kubevip.yaml"), { source: "kubevip.yaml", nodes: await nodes() }),
  },
  {
    golden: "kubevip_bgp.expected.toml",
    run: async () =>
      importKubeVip(await read("kubevip.yaml"), { source: "kubevip.yaml", announce: "bgp" }),
  },
];

for (const c of cases) {
  Deno.test(`import: ${c.golden} is what the translation writes`, async () => {
    await golden(c.golden, await c.run());
  });
}

Deno.test("import: with the cluster's Nodes, both imported inventories pass keelson check", async () => {
  for (const name of ["metallb_nodes.expected.toml", "kubevip_nodes.expected.toml"]) {
    const text = await cases.find((c) => c.golden === name)!.run();
    assert.deepEqual(await inventoryIssues(text, name), [], name);
  }
});

Deno.test("import: without Nodes, check's problems name the produced lines (machines to fill in)", async () => {
  const text = await cases[0]!.run();
  const issues = await inventoryIssues(text, "out.toml");
  assert.ok(issues.some((i) => /lists no machines/.test(i.message)));
  const lines = text.split("\n");
  for (const issue of issues.filter((i) => i.line !== undefined)) {
    // the line named holds the key the issue is about
    const key = issue.path.split(".").at(-1)!.replace(/\[\d+\]$/, "");
    assert.match(lines[issue.line! - 1]!, new RegExp(`^(\\[|${key})`), issue.path);
  }
});

Deno.test("import metallb: the Nodes decide machines, roles and which hosts peer", async () => {
  const text = await cases[1]!.run();
  assert.match(text, /name = "cp-1"\nrole = "control-plane"\nregion = "dc1"\nzone = "dc1-row-a"/);
  assert.match(text, /name = "cp-2"\nrole = "control-plane"\nid = "SN-8H2K9R"/);
  assert.match(text, /name = "cp-3"\nrole = "control-plane"/);
  assert.match(text, /providerID is "kind:\/\/docker\/kind\/cp-3", another provider.s/);
  assert.match(text, /name = "w-1"\nrole = "worker"/);
  // tor-a's selector (zone dc1-row-a) picks the control-plane Nodes of that zone
  assert.match(text, /name = "tor-a"[^[]*hosts = \["cp-1", "cp-2"\]/);
});
