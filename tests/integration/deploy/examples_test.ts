/**
 * The examples by size in deploy/examples each pass `keelson check` as an operator runs it, and
 * each is what its name says: the minimal one (what the package installs as the inventory) serves
 * one VRRP pool from three control-plane hosts with no BGP, control-plane VIP or bond; the BGP one
 * has peers; the full one has every section.
 */
import assert from "node:assert/strict";
import { parse } from "smol-toml";

const ROOT = new URL("../../../", import.meta.url).pathname;

/** Runs `deno run main.ts check --config FILE` from the checkout, as a user would. */
async function check(file: string) {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-env", "main.ts", "check", "--config", file],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: output.code, output: decode(output.stdout) + decode(output.stderr) };
}

async function toml(file: string): Promise<Record<string, unknown>> {
  return parse(await Deno.readTextFile(`${ROOT}${file}`)) as Record<string, unknown>;
}

const EXAMPLES = ["minimal.toml", "bgp.toml", "keelson.toml"];

for (const name of EXAMPLES) {
  Deno.test(`deploy/examples/${name} passes keelson check`, async () => {
    const file = `deploy/examples/${name}`;
    const result = await check(file);
    assert.equal(result.code, 0, result.output);
    assert.match(result.output, new RegExp(`^${file.replaceAll(".", "\\.")}: OK\n`));
  });
}

Deno.test("deploy/examples/minimal.toml is VRRP only: three control-plane hosts, one pool", async () => {
  const inventory = await toml("deploy/examples/minimal.toml");
  for (const section of ["bgp", "control_plane"]) {
    assert.equal(inventory[section], undefined, `minimal.toml has no [${section}]`);
  }
  const machines = inventory.machines as Array<Record<string, unknown>>;
  assert.deepEqual(machines.map((m) => m.role), [
    "control-plane",
    "control-plane",
    "control-plane",
  ]);
  const pools = inventory.pools as Array<Record<string, unknown>>;
  assert.equal(pools.length, 1);
  assert.equal(pools[0]!.announce, undefined, "the pool is served over VRRP");
  const keepalived = inventory.keepalived as Record<string, unknown>;
  assert.notEqual(keepalived.interface, "bond0");
});

Deno.test("deploy/examples/bgp.toml has BGP peers and a BGP pool", async () => {
  const inventory = await toml("deploy/examples/bgp.toml");
  const bgp = inventory.bgp as Record<string, unknown>;
  assert.ok((bgp.peers as unknown[]).length > 0);
  const pools = inventory.pools as Array<Record<string, unknown>>;
  assert.ok(pools.some((pool) => pool.announce === "bgp"));
});
