/**
 * `keelson plan` refuses a snapshot it cannot plan from (no Node and no Service) saying what it
 * holds, and lists the LoadBalancer Services of another class instead of dropping them.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../../../", import.meta.url).pathname;
const CONFIG = `${ROOT}deploy/examples/keelson.toml`;

async function plan(state: string, ...more: string[]) {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/state.yaml`, state);
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-all",
        `${ROOT}main.ts`,
        "plan",
        "--config",
        CONFIG,
        "--state",
        `${dir}/state.yaml`,
        ...more,
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

Deno.test("plan refuses an empty snapshot", async () => {
  const result = await plan("");
  assert.equal(result.code, 1, result.out);
  assert.match(result.err, /holds no object and nothing plan reads/);
  assert.match(result.err, /kubectl get nodes,svc,endpointslices -A -o yaml/);
  assert.equal(result.out, "");
});

Deno.test("plan refuses a snapshot holding only a Pod, saying so", async () => {
  const result = await plan(
    "apiVersion: v1\nkind: Pod\nmetadata: { name: p, namespace: default }\n",
  );
  assert.equal(result.code, 1, result.out);
  assert.match(result.err, /holds 1 Pod and nothing plan reads/);
});

const OTHER_CLASS = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Service
  metadata: { name: ours, namespace: default }
  spec: { type: LoadBalancer, ports: [{ port: 80 }] }
- apiVersion: v1
  kind: Service
  metadata: { name: theirs, namespace: default }
  spec: { type: LoadBalancer, loadBalancerClass: example.com/other-lb, ports: [{ port: 80 }] }
- apiVersion: v1
  kind: Service
  metadata: { name: plain, namespace: default }
  spec: { type: ClusterIP, ports: [{ port: 80 }] }
`;

Deno.test("plan lists the Services of another load-balancer class as not Keelson's", async () => {
  const text = await plan(OTHER_CLASS);
  assert.equal(text.code, 0, text.err);
  assert.match(text.out, /default\/theirs {2}not Keelson's \(class example\.com\/other-lb\)/);
  assert.match(text.out, /default\/ours {2}allocated /);
  assert.doesNotMatch(text.out, /default\/plain/);

  const json = await plan(OTHER_CLASS, "-o", "json");
  assert.equal(json.code, 0, json.err);
  const found = JSON.stringify(JSON.parse(json.out));
  assert.match(
    found,
    /"otherClass":\[\{"serviceKey":"default\/theirs","loadBalancerClass":"example\.com\/other-lb"\}\]/,
  );
});

Deno.test("plan names each pool's serving hosts, with the snapshot's Nodes' readiness", async () => {
  const state = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: cp-2}
  status:
    conditions: [{type: Ready, status: "False"}]
`;
  const text = await plan(state);
  assert.equal(text.code, 0, text.err);
  assert.match(
    text.out,
    /^Serving hosts \(3 pools\):\n {2}public \(VRRP\): cp-1, cp-2 \(Node not Ready\), cp-3$/m,
  );
  assert.match(text.out, /^ {2}public-bgp \(BGP\): cp-1, cp-2 \(Node not Ready\), cp-3$/m);
});
