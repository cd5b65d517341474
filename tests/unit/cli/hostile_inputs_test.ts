/**
 * The reproductions of issue 9, run as a user would (`deno run main.ts ...`) against the example
 * inventory: hostile statuses, ill-typed snapshots, unbounded inputs and closed pipes.
 *
 * @module
 */
import assert from "node:assert/strict";
import { stringify } from "yaml";

const ROOT = new URL("../../../", import.meta.url).pathname;
const E = "deploy/examples/keelson.toml";
const TEMP = await Deno.makeTempDir({ prefix: "keelson-hostile-test." });
globalThis.addEventListener("unload", () => Deno.removeSync(TEMP, { recursive: true }));

/** Runs `deno run main.ts ...args`, capturing both streams. */
async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-env", "--allow-sys", "main.ts", ...args],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: output.code, out: decode(output.stdout), err: decode(output.stderr) };
}

function assertNoStackTrace(text: string): void {
  assert.doesNotMatch(text, /^\s+at .+:\d+:\d+\)?$/m, `stack trace in:\n${text}`);
  assert.doesNotMatch(text, /Uncaught|TypeError|RangeError/, text);
}

async function writeState(items: unknown[]): Promise<string> {
  const path = await Deno.makeTempFile({ dir: TEMP, suffix: ".yaml" });
  await Deno.writeTextFile(path, stringify({ apiVersion: "v1", kind: "List", items }));
  return path;
}

function lbService(name: string, ips: string[]): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: "default", creationTimestamp: "2026-01-01T00:00:00Z" },
    spec: { type: "LoadBalancer", ports: [{ port: 80, protocol: "TCP" }] },
    status: { loadBalancer: { ingress: ips.map((ip) => ({ ip })) } },
  };
}

Deno.test("render keepalived serves only pool addresses, never hostile statuses (issue 9 item 1)", async () => {
  const hostile = [
    "224.0.0.18", // the VRRP group
    "10.0.0.12", // another machine's own IP
    "10.0.0.10", // the control-plane VIP
    "127.0.0.1",
    "0.0.0.0",
    "::1",
    "fe80::1",
    "ff02::12",
    "198.51.100.7", // a unicast address no pool holds
    "203.0.113.16", // the network address of the pool's CIDR
  ];
  const state = await writeState([
    ...hostile.map((ip, i) => lbService(`evil-${i}`, [ip])),
    lbService("good", ["203.0.113.18"]),
  ]);
  const { code, out, err } = await cli([
    "render",
    "keepalived",
    "--config",
    E,
    "--state",
    state,
    "--host",
    "cp-1",
  ]);
  assert.equal(code, 0, err);
  // one bad Service never stops the rest: the good one and the control-plane VIP are served
  assert.match(out, /^ {8}203\.0\.113\.18\/32 dev bond0$/m);
  assert.match(out, /^ {8}10\.0\.0\.10\/32 dev bond0$/m);
  const served = [...out.matchAll(/^ {8}(\S+)\/\d+ dev /gm)].map((m) => m[1]);
  assert.deepEqual(served.sort(), ["10.0.0.10", "2001:db8:0:1::10", "203.0.113.18"].sort());
  for (const ip of hostile) {
    // the control-plane VIP is served once, by its own instance, never as a Service VIP
    if (ip !== "10.0.0.10") assert.ok(!served.includes(ip), `${ip} is served`);
    assert.ok(err.includes(`"${ip}"`), `no word on ${ip} in:\n${err}`);
  }
  assert.match(err, /"224\.0\.0\.18".*no pool offers it/);
  assert.match(err, /"10\.0\.0\.12".*machine "cp-2"/);
});

Deno.test("plan never gives a Node another machine's identity (issue 9 item 2)", async () => {
  const state = await writeState([
    {
      apiVersion: "v1",
      kind: "Node",
      metadata: { name: "cp-1" },
      spec: { providerID: "baremetal://SN-8H2K9Q" },
      status: { addresses: [{ type: "InternalIP", address: "10.0.0.11" }] },
    },
    {
      apiVersion: "v1",
      kind: "Node",
      metadata: { name: "evil" },
      spec: {
        taints: [{
          key: "node.cloudprovider.kubernetes.io/uninitialized",
          value: "true",
          effect: "NoSchedule",
        }],
      },
      status: { addresses: [{ type: "InternalIP", address: "10.0.0.11" }] },
    },
  ]);
  const { code, out, err } = await cli(["plan", "-c", E, "-s", state, "-o", "json"]);
  assert.equal(code, 0, err);
  const plan = JSON.parse(out) as { nodes: { node: string; actions: Record<string, unknown>[] }[] };
  const evil = plan.nodes.find((n) => n.node === "evil")!;
  assert.ok(!evil.actions.some((a) => a.action === "initialize"), JSON.stringify(evil));
  const stay = evil.actions.find((a) => a.action === "stay-tainted")!;
  assert.match(String(stay.reason), /already belongs to node "cp-1"/);
  assert.ok(!evil.actions.some((a) => a.action === "delete"));
});
