/**
 * A router's address (a `[[bgp.peers]]` address) or the control-plane VIP is never a pool
 * address a Service may get: `check` refuses the pool that holds one with the line, and `plan`
 * therefore never allocates it. A reserved address is never handed out, so a pool may span a
 * router that sits on it, as it may span a machine.
 */
import assert from "node:assert/strict";
import type { V1Service } from "@kubernetes/client-node";
import { ConfigError } from "../../../src/config/config_error.ts";
import { parseConfig } from "../../../src/config/parse_config.ts";
import { planAllocations } from "../../../providers/baremetal/ipam/plan_allocations.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;

const inventory = (pool: string) =>
  `[cluster]
name = "t"

[control_plane]
vip = ["10.0.0.10"]

[bgp]
asn = 64513

[[bgp.peers]]
name = "tor"
address = "192.168.10.1"
asn = 64512

[[pools]]
name = "p"
${pool}
announce = "bgp"

[[machines]]
name = "cp1"
role = "control-plane"
internal_ips = ["10.0.0.11"]
`;

function problems(text: string): string[] {
  try {
    parseConfig(text, "k.toml");
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return error.issues.map((i) => `${i.line}: ${i.path}: ${i.message}`);
  }
  return [];
}

Deno.test("a pool holding a BGP peer's address is refused at the peer's line", () => {
  const found = problems(inventory('addresses = ["192.168.10.0/24"]'));
  assert.equal(found.length, 1, found.join("\n"));
  assert.match(found[0]!, /^12: bgp\.peers\[0\]\.address: "192\.168\.10\.1" lies in pool "p"/);
  assert.match(found[0]!, /reserved list/);
});

Deno.test("a pool holding the control-plane VIP is refused at the VIP's line", () => {
  const found = problems(inventory('addresses = ["10.0.0.8/29"]'));
  assert.ok(
    found.some((p) => /^5: control_plane\.vip\[0\]: "10\.0\.0\.10" lies inside/.test(p)),
    found.join("\n"),
  );
});

Deno.test("a reserved router address passes check and is never allocated", () => {
  const config = parseConfig(
    inventory('addresses = ["192.168.10.0/29"]\nreserved = ["192.168.10.1"]'),
    "k.toml",
  );
  const services: V1Service[] = Array.from({ length: 8 }, (_, i) => ({
    metadata: { name: `s${i}`, namespace: "default", uid: `u${i}` },
    spec: { type: "LoadBalancer", ports: [{ port: 80 }] },
  }));
  const plan = planAllocations(config, services);
  const given = plan.services.flatMap((s) => s.ips);
  // .0 and .7 are network and broadcast, .1 the router: five addresses for eight Services
  assert.deepEqual(given.sort(), [
    "192.168.10.2",
    "192.168.10.3",
    "192.168.10.4",
    "192.168.10.5",
    "192.168.10.6",
  ]);
  assert.equal(plan.services.filter((s) => s.outcome === "pending").length, 3);
});

Deno.test("plan refuses an inventory whose pool holds the router, naming the line", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/k.toml`, inventory('addresses = ["192.168.10.0/24"]'));
    await Deno.writeTextFile(
      `${dir}/s.yaml`,
      "apiVersion: v1\nkind: Service\nmetadata: { name: web, namespace: default }\n" +
        "spec: { type: LoadBalancer, ports: [{ port: 80 }] }\n",
    );
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-all",
        `${ROOT}main.ts`,
        "plan",
        "--config",
        `${dir}/k.toml`,
        "--state",
        `${dir}/s.yaml`,
      ],
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const out = new TextDecoder().decode(output.stdout);
    const err = new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 1, out);
    assert.match(err, /k\.toml:12: bgp\.peers\[0\]\.address/);
    assert.doesNotMatch(out, /192\.168\.10\.1\b/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
