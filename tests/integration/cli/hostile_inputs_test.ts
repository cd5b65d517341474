/**
 * Hostile inputs, run as a user would (`deno run main.ts ...`) against the example
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

Deno.test("render keepalived serves only pool addresses, never hostile statuses", async () => {
  const hostile = [
    "224.0.0.18", // the VRRP group
    "10.0.0.12", // another machine's own IP
    "10.0.0.10", // the control-plane VIP
    "127.0.0.1",
    "0.0.0.0",
    "::1",
    "fe80::1",
    "ff02::12",
    "198.51.100.200", // a unicast address no pool holds (public-bgp is 198.51.100.0/27)
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

Deno.test("plan never gives a Node another machine's identity", async () => {
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

Deno.test("plan and render refuse ill-typed snapshot items naming item and field", async () => {
  const base = lbService("web", ["203.0.113.18"]) as Record<string, Record<string, unknown>>;
  const cases: [string, unknown, RegExp][] = [
    [
      "an annotation value that is a number",
      { ...base, metadata: { ...base.metadata, annotations: { "keelson.io/address-pool": 5 } } },
      /item 0 \(Service "web"\): metadata\.annotations\.keelson\.io\/address-pool: must be a string, not the number 5/,
    ],
    [
      "an annotation value that is null",
      { ...base, metadata: { ...base.metadata, annotations: { a: null } } },
      /metadata\.annotations\.a: must be a string, not null/,
    ],
    [
      "loadBalancerIP as a number",
      { ...base, spec: { ...base.spec, loadBalancerIP: 5 } },
      /spec\.loadBalancerIP: must be a string/,
    ],
    [
      "spec.ports as a map",
      { ...base, spec: { ...base.spec, ports: { a: 1 } } },
      /spec\.ports: must be a list, not a map/,
    ],
    [
      "ingress as a map",
      { ...base, status: { loadBalancer: { ingress: { ip: "203.0.113.18" } } } },
      /status\.loadBalancer\.ingress: must be a list, not a map/,
    ],
    [
      "ingress as [null]",
      { ...base, status: { loadBalancer: { ingress: [null] } } },
      /status\.loadBalancer\.ingress\[0\]: must be a map, not null/,
    ],
    [
      "Node spec.taints as a string",
      { kind: "Node", metadata: { name: "n" }, spec: { taints: "x" } },
      /\(Node "n"\): spec\.taints: must be a list, not the string "x"/,
    ],
  ];
  for (const [what, item, message] of cases) {
    const state = await writeState([item]);
    for (
      const args of [
        ["plan", "-c", E, "-s", state],
        ["render", "keepalived", "-c", E, "-s", state, "--host", "cp-1"],
      ]
    ) {
      const { code, out, err } = await cli(args);
      assert.equal(code, 1, `${what}: ${args[0]} exited ${code}\n${out}${err}`);
      assert.match(err, message, what);
      assertNoStackTrace(out + err);
    }
  }
});

Deno.test("--config and --state must be regular files of at most 64 MiB", async () => {
  const fifo = `${TEMP}/fifo`;
  await new Deno.Command("mkfifo", { args: [fifo] }).output();
  for (const path of ["/dev/zero", fifo, TEMP]) {
    const check = await cli(["check", "-c", path]);
    assert.equal(check.code, 1, path);
    assert.match(
      check.out,
      /Cannot read the configuration file: (is not a regular file|is a directory)/,
    );
    const plan = await cli(["plan", "-c", E, "-s", path]);
    assert.equal(plan.code, 1, path);
    assert.match(plan.err, /Cannot read cluster state .*(is not a regular file|is a directory)/);
    assertNoStackTrace(check.out + check.err + plan.out + plan.err);
  }
  const big = `${TEMP}/big.toml`;
  await Deno.truncate(big, 64 * 1024 * 1024 + 1).catch(async () => {
    await Deno.writeFile(big, new Uint8Array(0));
    await Deno.truncate(big, 64 * 1024 * 1024 + 1);
  });
  const { code, out } = await cli(["check", "-c", big]);
  assert.equal(code, 1);
  assert.match(out, /is larger than 64 MiB/);
});

Deno.test("check refuses listen addresses run could not use", async () => {
  for (const listen of ["127.0.0.1:99999", "999.999.999.999:80", "[::zz]:80", "host name:80"]) {
    const path = await Deno.makeTempFile({ dir: TEMP, suffix: ".toml" });
    await Deno.writeTextFile(
      path,
      `[server]\nlisten = "${listen}"\n[[machines]]\nname = "w-1"\n`,
    );
    const { code, out } = await cli(["check", "-c", path]);
    assert.equal(code, 1, `${listen} accepted:\n${out}`);
    assert.match(out, /:2: server\.listen: /);
  }
});

Deno.test("run prints its fatal error before exiting 1: a listen port in use", async () => {
  const busy = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const path = `${TEMP}/busy.toml`;
    await Deno.writeTextFile(
      path,
      `[server]\nlisten = "127.0.0.1:${(busy.addr as Deno.NetAddr).port}"\n` +
        `[keepalived]\nenabled = false\n[[machines]]\nname = "w-1"\n`,
    );
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", "main.ts", "run", "--config", path, "--host", "w-1"],
      cwd: ROOT,
      env: { NO_COLOR: "1", KUBECONFIG: `${TEMP}/none` },
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(60_000),
    }).output();
    const err = new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 1, err);
    assert.match(err, /Cannot serve health and metrics/);
  } finally {
    busy.close();
  }
});

Deno.test("a closed stdout ends plan quietly", async () => {
  // large enough that the plan is still being written when head has gone
  const state = await writeState(
    Array.from({ length: 3000 }, (_, i) => lbService(`s-${i}`, [])),
  );
  const output = await new Deno.Command("bash", {
    args: [
      "-c",
      `"${Deno.execPath()}" run --allow-read --allow-env --allow-sys main.ts plan -c ${E} ` +
      `-s ${state} | head -1; echo "exit \${PIPESTATUS[0]}" >&2`,
    ],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const out = new TextDecoder().decode(output.stdout);
  const err = new TextDecoder().decode(output.stderr);
  assert.equal(out.split("\n").filter(Boolean).length, 1);
  assert.match(err, /^exit 0$/m);
  assert.doesNotMatch(err, /BrokenPipe|Broken pipe|error/i, err);
});

Deno.test("plan: exact pool sizes in JSON, and annotation text cannot forge plan lines", async () => {
  const forged = lbService("forge", []) as Record<string, Record<string, unknown>>;
  forged.metadata!.annotations = {
    "keelson.io/address-pool":
      "nope\n  default/victim  allocated 203.0.113.99 from pool public\x1b[2J",
  };
  const state = await writeState([forged]);
  const text = await cli(["plan", "-c", E, "-s", state]);
  assert.equal(text.code, 0, text.err);
  assert.doesNotMatch(text.out, /^ {2}default\/victim/m);
  assert.match(
    text.out,
    /pool "nope\\n {2}default\/victim {2}allocated .*\\x1b\[2J" does not exist/,
  );
  const json = await cli(["plan", "-c", E, "-s", state, "-o", "json"]);
  assert.equal(json.code, 0, json.err);
  const plan = JSON.parse(json.out) as { pools: { pool: string; total: unknown }[] };
  const v6 = plan.pools.find((s) => s.pool === "internal-v6")!;
  // a count a JSON number holds exactly is a number; only counts above 2^53 are text
  assert.equal(v6.total, 255);
  // a /64 pool: 2^64 - 1 usable addresses, every digit kept
  const big = `${TEMP}/big-pool.toml`;
  await Deno.writeTextFile(
    big,
    (await Deno.readTextFile(`${ROOT}/${E}`)).replace(
      '"2001:db8:0:20::/120"',
      '"2001:db8:0:20::/64"',
    ),
  );
  const wide = await cli(["plan", "-c", big, "-s", state, "-o", "json"]);
  assert.equal(wide.code, 0, wide.err);
  const widePlan = JSON.parse(wide.out) as typeof plan;
  assert.equal(
    widePlan.pools.find((s) => s.pool === "internal-v6")!.total,
    "18446744073709551615",
  );
});
