/**
 * `render bird` and `plan` on a snapshot of hostile Nodes: only Nodes of
 * inventory machines get pod routes, towards their machine's own unicast address, never a prefix
 * for two Nodes nor the whole cluster_cidr; `plan` names what is announced and what is refused and
 * why. Before, `render bird` exported every one of these and `plan` said "nothing to do".
 *
 * @module
 */
import assert from "node:assert/strict";

const ROOT = new URL("../../../", import.meta.url).pathname;
const BASE = `${ROOT}tests/unit/config/bgp/base.toml`;

async function keelson(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", `${ROOT}main.ts`, ...args],
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: output.code, out: decode(output.stdout), err: decode(output.stderr) };
}

/** Machines whose own inventory addresses may not be next hops (check accepts them). */
const EXTRA_MACHINES = `
[[machines]]
name = "mcast"
internal_ips = ["224.0.0.5"]

[[machines]]
name = "loop"
internal_ips = ["127.0.0.1"]

[[machines]]
name = "c-1"
internal_ips = ["10.0.0.31"]

[[machines]]
name = "c-2"
internal_ips = ["10.0.0.32"]
`;

function nodeYaml(name: string, cidrs: string[], ips: string[], providerID?: string): string {
  return `- apiVersion: v1
  kind: Node
  metadata: { name: ${name} }
  spec: { podCIDRs: [${cidrs.join(", ")}]${providerID ? `, providerID: "${providerID}"` : ""} }
  status: { addresses: [${
    ips.map((ip) => `{ type: InternalIP, address: "${ip}" }`).join(", ")
  }], conditions: [{ type: Ready, status: "True" }] }
`;
}

const STATE = `apiVersion: v1
kind: List
items:
${nodeYaml("w-1", ["10.244.1.0/24"], ["10.0.0.21"])}${
  // in no inventory, claiming w-1's CIDR with a lower next hop (it took w-1's route before)
  nodeYaml("intruder", ["10.244.1.0/24"], ["10.0.0.2"])}${
  // an inventory machine's Node whose pod CIDR is the whole cluster_cidr
  nodeYaml("cp-2", ["10.244.0.0/16"], ["10.0.0.12"])}${
  // an inventory Node reporting the router's, the control-plane VIP's and a VIP's address
  nodeYaml("cp-1", ["10.244.6.0/24"], ["10.0.0.1", "10.0.0.10", "198.51.100.5"])}${
  nodeYaml("mcast", ["10.244.7.0/24"], ["10.0.0.5"])
}${nodeYaml("loop", ["10.244.8.0/24"], ["0.0.0.0"])}${
  // two inventory Nodes claiming one prefix (nested)
  nodeYaml("c-1", ["10.244.5.0/24"], ["10.0.0.31"])}${
  nodeYaml("c-2", ["10.244.5.128/25"], ["10.0.0.32"])
}`;

async function inputs(dir: string): Promise<{ config: string; state: string }> {
  const config = `${dir}/keelson.toml`;
  await Deno.writeTextFile(config, (await Deno.readTextFile(BASE)) + EXTRA_MACHINES);
  const state = `${dir}/state.yaml`;
  await Deno.writeTextFile(state, STATE);
  return { config, state };
}

Deno.test("render bird announces pod CIDRs only for inventory Nodes, via their machine's unicast address, never contested or the whole cluster_cidr", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { config, state } = await inputs(dir);
    const result = await keelson(
      "render",
      "bird",
      "--config",
      config,
      "--state",
      state,
      "--host",
      "cp-1",
    );
    assert.equal(result.code, 0, result.err);
    const hops = [...result.out.matchAll(/route (\S+) blackhole \{ bgp_next_hop = ([^;]+); \};/g)]
      .map((m) => `${m[1]} via ${m[2]}`);
    assert.deepEqual(hops, ["10.244.1.0/24 via 10.0.0.21", "10.244.6.0/24 via 10.0.0.11"]);
    for (
      const [node, words] of [
        ["intruder", "its machine is not in the inventory"],
        ["cp-2", "whole of [cluster] cluster_cidr"],
        ["mcast", "224.0.0.5"],
        ["loop", "loopback"],
        ["c-1", 'overlaps 10.244.5.128/25 of Node "c-2"'],
        ["c-2", 'overlaps 10.244.5.0/24 of Node "c-1"'],
      ]
    ) {
      assert.ok(
        result.err.split("\n").some((l) => l.includes(`Node "${node}"`) && l.includes(words!)),
        `no refusal of ${node} saying ${words}:\n${result.err}`,
      );
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("plan names each Node's announced and refused pod CIDRs and why", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { config, state } = await inputs(dir);
    const json = await keelson("plan", "--config", config, "--state", state, "--output", "json");
    assert.equal(json.code, 0, json.err);
    const plan = JSON.parse(json.out) as {
      nodes: { node: string; actions: { action: string; cidr?: string; reason?: string }[] }[];
    };
    const routes = (name: string) =>
      plan.nodes.find((n) => n.node === name)!.actions.filter((a) => a.action.endsWith("-route"));
    assert.deepEqual(routes("w-1"), [
      { action: "announce-route", cidr: "10.244.1.0/24", nextHop: "10.0.0.21" },
    ]);
    assert.deepEqual(routes("cp-1"), [
      { action: "announce-route", cidr: "10.244.6.0/24", nextHop: "10.0.0.11" },
    ]);
    for (const name of ["intruder", "cp-2", "mcast", "loop", "c-1", "c-2"]) {
      const refused = routes(name);
      assert.equal(refused.length, 1, name);
      assert.equal(refused[0]!.action, "refuse-route", name);
      assert.ok(refused[0]!.reason, name);
    }
    const text = await keelson("plan", "--config", config, "--state", state);
    assert.equal(text.code, 0, text.err);
    assert.match(text.out, /announce pod CIDR 10\.244\.1\.0\/24 via 10\.0\.0\.21/);
    assert.match(
      text.out,
      /intruder +refuse pod CIDR 10\.244\.1\.0\/24: its machine is not in the inventory/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
