/**
 * `keelson import` as an operator runs it (`deno run main.ts import …`, no --allow-all): the
 * exit codes, errors with file and line, the
 * Nodes listed from a cluster with --kubeconfig (a loopback API server that records every
 * request: one GET, nothing written), and hostile names that cannot break the TOML or the
 * terminal.
 */
import assert from "node:assert/strict";
import { parse as parseToml } from "smol-toml";
import { parse as parseYaml } from "yaml";

const ROOT = new URL("../../../", import.meta.url).pathname;
const DATA = "tests/unit/import/testdata";
const TEMP = await Deno.makeTempDir({ prefix: "keelson-import-test." });
globalThis.addEventListener("unload", () => Deno.removeSync(TEMP, { recursive: true }));

async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-read",
      "--allow-env",
      "--allow-net",
      "--allow-sys=hostname,uid",
      `--allow-write=${TEMP}`,
      "main.ts",
      "import",
      ...args,
    ],
    cwd: ROOT,
    env: { NO_COLOR: "1", KUBECONFIG: "" },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: output.code, out: decode(output.stdout), err: decode(output.stderr) };
}

Deno.test("keelson import: help, and a wrong command line exits 2", async () => {
  const help = await cli(["--help"]);
  assert.equal(help.code, 0);
  assert.match(help.out, /keelson import metallb {2}--from FILE/);
  assert.match(help.out, /kubectl get configmap kubevip -n kube-system -o yaml/);
  for (
    const args of [
      [],
      ["calico"],
      ["metallb"],
      ["metallb", "--from", "x", "--announce", "bgp"],
      ["kube-vip", "--from", "x", "--announce", "arp"],
      ["metallb", "--from", "x", "--context", "c"],
    ]
  ) {
    const run = await cli(args);
    assert.equal(run.code, 2, `${args.join(" ")}: ${run.err}`);
  }
});

Deno.test("keelson import metallb: stdout, then check's problems with the output's lines, exit 1", async () => {
  const run = await cli(["metallb", "--from", `${DATA}/metallb.yaml`]);
  assert.equal(run.code, 1);
  assert.match(run.out, /^# Keelson inventory imported from MetalLB/);
  parseToml(run.out); // the whole output is TOML
  assert.match(run.err, /^<stdout>:\d+: keepalived\.enabled: /m);
  assert.match(run.err, /the inventory lists no machines/);
  // a pool served by Nodes with a label: until the machines carry it, check names the pool
  assert.match(run.err, /^<stdout>:\d+: pools\[2\]\.served_by: selects no machine/m);
  assert.match(run.err, /written, but keelson check would refuse it \(4 problems\)/);
  assert.doesNotMatch(run.out + run.err, /s3cr3t-md5/); // the password is never copied
});

Deno.test("keelson import --kubeconfig: machines from the Nodes, one read, the output passes check, lost restrictions on stderr", async () => {
  const server = fakeApiServer();
  try {
    const kubeconfig = await writeKubeconfig(server.port);
    const target = `${TEMP}/keelson.toml`;
    const run = await cli([
      "metallb",
      "--from",
      `${DATA}/metallb.yaml`,
      "--kubeconfig",
      kubeconfig,
    ]);
    // exit 1: the file's selectors (namespaceSelectors, advertisements' node and Service
    // selectors) cannot all be kept; each is named on stderr, and none is a check problem
    assert.equal(run.code, 1, run.err);
    assert.match(run.err, /namespaceSelectors \(legacy-clients=true\)/);
    assert.match(run.err, /restrictions the old controller applied cannot be kept/);
    assert.doesNotMatch(run.err, /keelson check would refuse/);
    assert.match(run.out, /name = "cp-1"\nrole = "control-plane"/);
    // read only: one list of Nodes, nothing else
    assert.deepEqual(server.requests.map((r) => `${r.method} ${new URL(r.url).pathname}`), [
      "GET /api/v1/nodes",
    ]);
    await Deno.writeTextFile(target, run.out);
    const check = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-read", "--allow-env", "--allow-sys", "main.ts", "check", "-c", target],
      cwd: ROOT,
      stdout: "piped",
    }).output();
    assert.equal(check.code, 0, new TextDecoder().decode(check.stdout));
  } finally {
    await server.close();
  }
});

Deno.test("keelson import -o: refused as a usage error (the inventory goes to stdout)", async () => {
  const run = await cli(["kube-vip", "--from", `${DATA}/kubevip.yaml`, "-o", `${TEMP}/x.toml`]);
  assert.equal(run.code, 2);
  await assert.rejects(Deno.stat(`${TEMP}/x.toml`), Deno.errors.NotFound);
});

Deno.test("keelson import: an unreachable cluster or a bad file says why, with file and line", async () => {
  const unreachable = await writeKubeconfig(1);
  const down = await cli([
    "kube-vip",
    "--from",
    `${DATA}/kubevip.yaml`,
    "--kubeconfig",
    unreachable,
  ]);
  assert.equal(down.code, 1);
  assert.match(down.err, /^keelson import: cannot list the cluster's Nodes: /);

  const bad = `${TEMP}/bad.yaml`;
  await Deno.writeTextFile(
    bad,
    "apiVersion: v1\nkind: List\nitems:\n- apiVersion: metallb.io/v1beta1\n  kind: IPAddressPool\n" +
      "  metadata:\n    name: p\n  spec:\n    addresses:\n    - 10.0.0.0/24\n    - 10.0.1.300/24\n",
  );
  const run = await cli(["metallb", "--from", bad]);
  assert.equal(run.code, 1);
  assert.match(
    run.err,
    /bad\.yaml:11: IPAddressPool "p" spec\.addresses\[1\]: "10\.0\.1\.300\/24" is not a CIDR/,
  );

  await Deno.writeTextFile(
    bad,
    "apiVersion: v1\nkind: List\nitems:\n- kind: Pod\n  metadata: {name: x}\n",
  );
  const none = await cli(["metallb", "--from", bad]);
  assert.equal(none.code, 1);
  assert.match(
    none.err,
    /holds no MetalLB IPAddressPool or BGPPeer \(it holds 1 Pod \(no apiVersion\)\)/,
  );

  await Deno.writeTextFile(
    bad,
    "kind: ConfigMap\nmetadata: {name: kubevip}\ndata:\n  cidr-global: 10.0.0.0/33\n",
  );
  const vip = await cli(["kube-vip", "--from", bad]);
  assert.match(
    vip.err,
    /bad\.yaml:4: ConfigMap "kubevip" cidr-global: "10\.0\.0\.0\/33" is not a CIDR/,
  );
});

Deno.test("keelson import: hostile names stay values (TOML-escaped) and comments stay comments", async () => {
  const hostile = `${TEMP}/hostile.json`;
  const evil = 'p\n[evil]\nx = "\u001b]0;owned\u0007';
  await Deno.writeTextFile(
    hostile,
    JSON.stringify({
      kind: "List",
      items: [
        {
          apiVersion: "metallb.io/v1beta1",
          kind: "IPAddressPool",
          metadata: { name: evil },
          spec: {
            addresses: ["10.1.0.0/24"],
            serviceAllocation: { namespaceSelectors: [{ matchLabels: { a: evil } }] },
          },
        },
        {
          apiVersion: "metallb.io/v1beta1",
          kind: "L2Advertisement",
          metadata: { name: evil },
          spec: { interfaces: [evil, "eth1"] },
        },
      ],
    }),
  );
  const run = await cli(["metallb", "--from", hostile]);
  assert.equal(run.code, 1);
  const doc = parseToml(run.out) as { pools: { name: string }[]; evil?: unknown };
  assert.equal(doc.pools[0]!.name, evil);
  assert.equal(doc.evil, undefined);
  for (const control of ["\u001b", "\u0007"]) assert.ok(!(run.out + run.err).includes(control));
  for (const line of run.out.split("\n")) {
    assert.ok(line === "" || line.startsWith("#") || /^(\[|[a-z_]+ = )/.test(line), line);
  }
});

/** A loopback API server answering the Node list from testdata/nodes.yaml; records requests. */
function fakeApiServer() {
  const requests: Request[] = [];
  const nodes = parseYaml(Deno.readTextFileSync(`${ROOT}${DATA}/nodes.yaml`)) as {
    items: unknown[];
  };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    requests.push(request);
    if (request.method === "GET" && new URL(request.url).pathname === "/api/v1/nodes") {
      return Response.json({
        kind: "NodeList",
        items: nodes.items,
        metadata: { resourceVersion: "9" },
      });
    }
    return Response.json({ kind: "Status", code: 403 }, { status: 403 });
  });
  return { requests, port: server.addr.port, close: () => server.shutdown() };
}

async function writeKubeconfig(port: number): Promise<string> {
  const path = `${TEMP}/kubeconfig-${port}.yaml`;
  await Deno.writeTextFile(
    path,
    `apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n  cluster:\n` +
      `    server: http://127.0.0.1:${port}\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n` +
      `users:\n- name: u\n  user: {token: t}\n`,
  );
  return path;
}

Deno.test("keelson import as shipped: the inventory on stdout", async () => {
  const { runAsShipped, ROOT_URL } = await import("../_harness/run_as_shipped.ts");
  const run = (args: string[]) =>
    runAsShipped(
      `import { dispatch } from "${ROOT_URL}src/cli/dispatch.ts";\n` +
        `Deno.exit(await dispatch(${JSON.stringify(["import", ...args])}));\n`,
    );
  const from = `${ROOT}${DATA}/kubevip.yaml`;
  const stdout = await run(["kube-vip", "--from", from]);
  assert.equal(stdout.code, 1, stdout.stderr); // machines still to fill in
  assert.match(stdout.stdout, /^# Keelson inventory imported from kube-vip/);
});

Deno.test("keelson import: a file past the size or object limit is refused before it is parsed", async () => {
  // 52 MB (a sparse file: stat(2) says its size, nothing is read)
  const large = `${TEMP}/large.yaml`;
  const file = await Deno.open(large, { write: true, create: true });
  await file.truncate(52 * 1024 * 1024);
  file.close();
  const big = await cli(["metallb", "--from", large]);
  assert.equal(big.code, 1);
  assert.match(big.err, /large\.yaml: is larger than 1 MiB \(54525952 bytes or more\)/);
  assert.equal(big.out, "");
  // 20,000 objects in under 1 MiB
  const many = `${TEMP}/many.yaml`;
  await Deno.writeTextFile(many, "kind: List\nitems:\n" + "- {kind: X}\n".repeat(20_000));
  for (const source of ["metallb", "kube-vip"]) {
    const run = await cli([source, "--from", many]);
    assert.equal(run.code, 1, source);
    assert.match(
      run.err,
      /many\.yaml: holds more than 10000 objects \(counted by their kind fields\)/,
    );
  }
});
