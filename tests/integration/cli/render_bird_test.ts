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

Deno.test("keelson render bird prints a host's file with Services and Nodes of a snapshot", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const state = `${dir}/state.yaml`;
    await Deno.writeTextFile(
      state,
      `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Service
  metadata: { name: web, namespace: default, annotations: { keelson.io/pool: bgp-public } }
  spec: { type: LoadBalancer, ports: [{ port: 80 }] }
  status: { loadBalancer: { ingress: [{ ip: 198.51.100.4 }] } }
- apiVersion: v1
  kind: Node
  metadata: { name: w-1 }
  spec: { podCIDRs: [10.244.1.0/24] }
  status: { addresses: [{ type: InternalIP, address: 10.0.0.21 }] }
`,
    );
    const secret = `${dir}/tor.key`;
    await Deno.writeTextFile(secret, "Sup3r-secret\n");
    await Deno.chmod(secret, 0o600);
    const config = `${dir}/keelson.toml`;
    await Deno.writeTextFile(
      config,
      (await Deno.readTextFile(BASE)).replace(
        "bfd = true\n",
        `bfd = true\npassword_file = "${secret}"\n`,
      ),
    );
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
    assert.match(result.out, /route 198\.51\.100\.4\/32 blackhole;/);
    assert.match(
      result.out,
      /route 10\.244\.1\.0\/24 blackhole \{ bgp_next_hop = 10\.0\.0\.21; \};/,
    );
    assert.match(result.out, /password "redacted-see-password_file";/);
    assert.ok(!result.out.includes("Sup3r-secret"));
    const shown = await keelson(
      "render",
      "bird",
      "--config",
      config,
      "--host",
      "cp-1",
      "--show-secrets",
    );
    assert.match(shown.out, /password "Sup3r-secret";/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("keelson render bird refuses a worker and an inventory without [bgp]", async () => {
  const worker = await keelson("render", "bird", "--config", BASE, "--host", "w-1");
  assert.equal(worker.code, 1);
  assert.match(worker.err, /not a control-plane machine/);
  const dir = await Deno.makeTempDir();
  const plain = `${dir}/plain.toml`;
  await Deno.writeTextFile(plain, '[[machines]]\nname = "cp-1"\nrole = "control-plane"\n');
  const none = await keelson("render", "bird", "--config", plain, "--host", "cp-1");
  await Deno.remove(dir, { recursive: true });
  assert.equal(none.code, 1);
  assert.match(none.err, /no \[bgp\] table/);
});
