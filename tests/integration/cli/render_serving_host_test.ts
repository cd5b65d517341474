/**
 * `keelson render keepalived|bird --host w-1` for a worker that a pool's `served_by` selects: the
 * worker's file holds that pool's VIPs (its group, its sessions) and nothing of the control plane;
 * a worker that serves nothing is still refused.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../../../", import.meta.url).pathname;

const INVENTORY = `
[keepalived]
interface = "eth0"
vrid_range = [100, 119]
track_file_dir = "/run/keelson"

[control_plane]
vip = ["10.250.0.100"]

[bgp]
asn = 64513

[[bgp.peers]]
name = "tor"
address = "10.250.0.1"
asn = 64512

[[pools]]
name = "lan"
addresses = ["10.250.0.150-10.250.0.151"]

[[pools]]
name = "edge"
addresses = ["10.250.0.160-10.250.0.161"]
served_by = { roles = ["worker"], labels = { edge = "yes" } }

[[pools]]
name = "edge-bgp"
addresses = ["198.51.100.0/28"]
announce = "bgp"
served_by = { machines = ["w-1"] }

[[machines]]
name = "cp-1"
role = "control-plane"
internal_ips = ["10.250.0.11"]

[[machines]]
name = "w-1"
internal_ips = ["10.250.0.21"]
labels = { edge = "yes" }

[[machines]]
name = "w-2"
internal_ips = ["10.250.0.22"]
labels = { edge = "yes" }

[[machines]]
name = "w-3"
internal_ips = ["10.250.0.23"]
`;

const STATE = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Service
  metadata: { name: a, namespace: default }
  spec: { type: LoadBalancer, ports: [{ port: 80 }] }
  status: { loadBalancer: { ingress: [{ ip: 10.250.0.150 }] } }
- apiVersion: v1
  kind: Service
  metadata: { name: b, namespace: default }
  spec: { type: LoadBalancer, ports: [{ port: 80 }] }
  status: { loadBalancer: { ingress: [{ ip: 10.250.0.160 }] } }
- apiVersion: v1
  kind: Service
  metadata: { name: c, namespace: default }
  spec: { type: LoadBalancer, ports: [{ port: 80 }] }
  status: { loadBalancer: { ingress: [{ ip: 198.51.100.2 }] } }
`;

async function render(kind: string, host: string) {
  const dir = await Deno.makeTempDir({ prefix: "keelson-render-serving." });
  try {
    await Deno.writeTextFile(`${dir}/keelson.toml`, INVENTORY);
    await Deno.writeTextFile(`${dir}/state.yaml`, STATE);
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-all",
        `${ROOT}main.ts`,
        "render",
        kind,
        "--config",
        `${dir}/keelson.toml`,
        "--state",
        `${dir}/state.yaml`,
        "--host",
        host,
      ],
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const decode = (b: Uint8Array) => new TextDecoder().decode(b);
    return { code: output.code, out: decode(output.stdout), err: decode(output.stderr) };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("render keepalived --host w-1: the workers' group with the pool they serve only", async () => {
  const w1 = await render("keepalived", "w-1");
  assert.equal(w1.code, 0, w1.err);
  assert.match(w1.out, /10\.250\.0\.160\/32/);
  assert.doesNotMatch(w1.out, /10\.250\.0\.150|10\.250\.0\.100|keelson_cp_v4|track_file/);
  assert.match(w1.out, /unicast_src_ip 10\.250\.0\.21/);
  assert.match(w1.out, /unicast_peer \{\s+10\.250\.0\.22\s+\}/);
  const cp = await render("keepalived", "cp-1");
  assert.equal(cp.code, 0, cp.err);
  assert.match(cp.out, /10\.250\.0\.150\/32/);
  assert.doesNotMatch(cp.out, /10\.250\.0\.160/);
  const w3 = await render("keepalived", "w-3");
  assert.equal(w3.code, 1);
  assert.match(w3.err, /"w-3": its role is "worker" and no VRRP pool's served_by selects it/);
});

Deno.test("render bird --host w-1: the worker announces its own pool over its own session", async () => {
  const w1 = await render("bird", "w-1");
  assert.equal(w1.code, 0, w1.err);
  assert.match(w1.out, /route 198\.51\.100\.2\/32 blackhole;/);
  assert.match(w1.out, /neighbor 10\.250\.0\.1 as 64512;/);
  assert.match(w1.out, /router id 10\.250\.0\.21;/);
  const w2 = await render("bird", "w-2");
  assert.equal(w2.code, 1);
  assert.match(w2.err, /"w-2": it is not a control-plane machine/);
});
