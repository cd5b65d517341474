/**
 * `keelson status --config` reads the Nodes for the pools' serving hosts: a pool whose serving
 * hosts' Nodes are NotReady is a problem (exit 3); a kubeconfig that may not list Nodes gets a note
 * and the inventory's view.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../../../", import.meta.url).pathname;
const TEMP = await Deno.makeTempDir({ prefix: "keelson-status-serving." });
globalThis.addEventListener("unload", () => Deno.removeSync(TEMP, { recursive: true }));

const INVENTORY = `
[[pools]]
name = "edge"
addresses = ["192.0.2.0/29"]
[pools.served_by]
roles = ["worker"]

[[machines]]
name = "cp-1"
role = "control-plane"
internal_ips = ["10.0.0.11"]

[[machines]]
name = "w-1"
internal_ips = ["10.0.0.21"]
`;

/** A loopback API server: empty Service and Lease lists; the Nodes as given, or 403. */
function fakeApiServer(nodes: unknown[] | "forbidden") {
  const paths: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    const path = new URL(request.url).pathname;
    paths.push(path);
    const list = (kind: string, items: unknown[]) =>
      Response.json({ kind, apiVersion: "v1", items, metadata: { resourceVersion: "1" } });
    if (path === "/api/v1/services") return list("ServiceList", []);
    if (path.endsWith("/leases")) {
      return Response.json({
        kind: "LeaseList",
        apiVersion: "coordination.k8s.io/v1",
        items: [],
        metadata: { resourceVersion: "1" },
      });
    }
    if (path === "/api/v1/nodes" && nodes !== "forbidden") return list("NodeList", nodes);
    return Response.json({ kind: "Status", code: 403, message: "forbidden" }, { status: 403 });
  });
  return { paths, port: server.addr.port, close: () => server.shutdown() };
}

async function status(nodes: unknown[] | "forbidden") {
  const server = fakeApiServer(nodes);
  try {
    const kubeconfig = `${TEMP}/kubeconfig-${server.port}.yaml`;
    await Deno.writeTextFile(
      kubeconfig,
      `apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n  cluster:\n` +
        `    server: http://127.0.0.1:${server.port}\ncontexts:\n- name: c\n  context: ` +
        `{cluster: k, user: u}\nusers:\n- name: u\n  user: {token: t}\n`,
    );
    const config = `${TEMP}/keelson-${server.port}.toml`;
    await Deno.writeTextFile(config, INVENTORY);
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-read",
        "--allow-env",
        "--allow-net",
        "main.ts",
        "status",
        "--config",
        config,
        "--kubeconfig",
        kubeconfig,
        "--observe",
        "0s",
        "-o",
        "json",
      ],
      cwd: ROOT,
      env: { NO_COLOR: "1", KUBECONFIG: "" },
      clearEnv: true,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const decode = (b: Uint8Array) => new TextDecoder().decode(b);
    return {
      code: output.code,
      json: JSON.parse(decode(output.stdout)),
      err: decode(output.stderr),
      paths: server.paths,
    };
  } finally {
    await server.close();
  }
}

Deno.test("keelson status --config: serving hosts with the Nodes' readiness; a pool nothing can serve is a problem", async () => {
  const run = await status([
    { metadata: { name: "w-1" }, status: { conditions: [{ type: "Ready", status: "False" }] } },
  ]);
  assert.ok(run.paths.includes("/api/v1/nodes"), run.paths.join(" "));
  assert.equal(run.code, 3, run.err);
  assert.ok(
    run.json.problems.includes("pool edge: no machine can serve it (w-1 (Node not Ready))"),
    JSON.stringify(run.json.problems),
  );
  assert.deepEqual(run.json.servingHosts[0].hosts, [
    { host: "w-1", state: "node-not-ready", node: "False" },
  ]);
});

Deno.test("keelson status --config: Nodes it may not list leave a note and the inventory's view", async () => {
  const run = await status("forbidden");
  assert.match(run.err, /note: the Nodes could not be read .*judged from the inventory alone/);
  assert.deepEqual(run.json.servingHosts[0].hosts, [{
    host: "w-1",
    state: "serving",
    node: "unread",
  }]);
  assert.ok(!run.json.problems.some((p: string) => p.startsWith("pool edge")));
});

Deno.test("keelson status --config: every serving host must report, the workers a pool selects as the control-plane machines", async () => {
  const run = await status([
    { metadata: { name: "w-1" }, status: { conditions: [{ type: "Ready", status: "True" }] } },
  ]);
  assert.equal(run.code, 3, run.err);
  for (const host of ["cp-1", "w-1"]) {
    assert.ok(
      run.json.problems.includes(`serving host ${host} has never reported (no heartbeat Lease)`),
      JSON.stringify(run.json.problems),
    );
  }
});
