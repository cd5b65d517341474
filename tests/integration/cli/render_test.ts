import assert from "node:assert/strict";
import type { V1Service } from "@kubernetes/client-node";
import { renderCommand } from "../../../src/cli/render.ts";
import { convergedServices } from "../../../providers/baremetal/ipam/plan_allocations.ts";
import { UsageError } from "../../../src/cli/usage_error.ts";
import { loadConfigFile } from "../../../src/config/load_config.ts";
import { objectKey } from "../../../src/kube/ports.ts";
import { loadSnapshot } from "../../../src/snapshot/load_snapshot.ts";
import { KeepalivedAnnouncer } from "../../../providers/baremetal/keepalived/announcer.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;
const TEMP = await Deno.makeTempDir({ prefix: "keelson-render-test." });
globalThis.addEventListener("unload", () => Deno.removeSync(TEMP, { recursive: true }));

const INVENTORY = `
[keepalived]
interface = "eth0"
vrid_range = [100, 119]
track_file_dir = "/run/keelson"

[control_plane]
vip = ["10.250.0.100"]

[[pools]]
name = "lan"
addresses = ["10.250.0.150-10.250.0.151"]

[[machines]]
name = "cp-1"
role = "control-plane"
internal_ips = ["10.250.0.11"]

[[machines]]
name = "cp-2"
role = "control-plane"
internal_ips = ["10.250.0.12"]

[[machines]]
name = "w-1"
role = "worker"
internal_ips = ["10.250.0.21"]
`;

function service(name: string, ips: string[], extra: Record<string, unknown> = {}): V1Service {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: "default", creationTimestamp: new Date("2026-01-01T00:00:00Z") },
    spec: { type: "LoadBalancer", ports: [{ port: 80, protocol: "TCP" }], ...extra },
    status: { loadBalancer: { ingress: ips.map((ip) => ({ ip, ipMode: "VIP" })) } },
  };
}

/** A temp dir with the inventory and a snapshot of `services`. */
async function fixture(services: V1Service[]): Promise<{ config: string; state: string }> {
  const dir = await Deno.makeTempDir({ dir: TEMP });
  const config = `${dir}/keelson.toml`;
  const state = `${dir}/state.json`;
  await Deno.writeTextFile(config, INVENTORY);
  await Deno.writeTextFile(
    state,
    JSON.stringify({ apiVersion: "v1", kind: "List", items: services }),
  );
  return { config, state };
}

/** Runs `deno run main.ts render ...` as a user would, capturing both streams. */
async function runCli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-env", "--allow-sys", "main.ts", "render", ...args],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: output.code, out: decode(output.stdout), err: decode(output.stderr) };
}

/** The text the running announcer applies for `services` (a synced cache holding them). */
async function announced(
  configPath: string,
  services: V1Service[],
  host = "cp-2",
): Promise<string> {
  const config = await loadConfigFile(configPath);
  let applied: string | undefined;
  const announcer = new KeepalivedAnnouncer({
    config: () => config,
    configFile: config.keepalived.config_file,
    host,
    // as under deploy/systemd/keelson.service (user keelson), render's default --fifo-user
    notifyFifoUser: "keelson",
    applier: {
      apply: (text) => {
        applied = text;
        return Promise.resolve({ result: "success", reloaded: false, message: "captured" });
      },
    },
  });
  await announcer.setServiceSource({
    services: {
      list: () => services,
      get: (key) => services.find((s) => objectKey(s) === key),
    },
    hasSynced: () => true,
  });
  assert.ok(applied !== undefined, "the announcer applied nothing");
  return applied;
}

Deno.test("renderCommand prints exactly what the announcer applies for the same Services", async () => {
  const services = [
    service("web", ["10.250.0.150"]),
    service("other-class", ["10.250.0.160"], { loadBalancerClass: "example.com/other" }),
    service("cluster-ip", [], { type: "ClusterIP" }),
  ];
  const { config, state } = await fixture(services);
  const { code, out, err } = await runCli([
    "keepalived",
    "-c",
    config,
    "-s",
    state,
    "--host",
    "cp-2",
  ]);
  assert.equal(code, 0, err);
  assert.equal(out, await announced(config, services));
  assert.match(out, /10\.250\.0\.150\/32 dev eth0/);
  assert.doesNotMatch(out, /10\.250\.0\.160/);
  assert.match(out, /10\.250\.0\.100\/32 dev eth0/);
});

Deno.test("renderCommand adds the address plan would give a pending Service", async () => {
  const services = [service("web", ["10.250.0.150"]), service("pending", [])];
  const { config, state } = await fixture(services);
  const loaded = await loadConfigFile(config);
  const converged = convergedServices(loaded, (await loadSnapshot(state)).services);
  assert.deepEqual(converged.map((s) => s.status?.loadBalancer?.ingress?.[0]?.ip), [
    "10.250.0.150",
    "10.250.0.151",
  ]);
  const { code, out } = await runCli(["keepalived", "-c", config, "-s", state, "--host", "cp-2"]);
  assert.equal(code, 0);
  assert.match(out, /10\.250\.0\.151\/32 dev eth0/);
  // the same as the announcer once the leader has written the planned status
  const written = [service("web", ["10.250.0.150"]), service("pending", ["10.250.0.151"])];
  assert.equal(out, await announced(config, written));
});

Deno.test("renderCommand without --state renders the control-plane VIP only", async () => {
  const { config } = await fixture([]);
  const { code, out, err } = await runCli(["keepalived", "--config", config, "--host", "cp-1"]);
  assert.equal(code, 0);
  // the pools the host serves, on stderr: stdout stays the file alone
  assert.match(err, /^Host "cp-1" serves VRRP pool "lan" \(with "cp-2"\)$/m);
  assert.doesNotMatch(out, /serves VRRP pool/);
  assert.match(out, /vrrp_instance keelson_cp_v4 \{/);
  assert.doesNotMatch(out, /keelson_v4_g/);
  assert.match(out, /init_file 1/);
  assert.equal(out, await announced(config, [], "cp-1"));
});

Deno.test("renderCommand prints the file without VRRP instances the announcer gives a retired host", async () => {
  const { config } = await fixture([service("web", ["10.250.0.150"])]);
  const inventory = await Deno.readTextFile(config);
  await Deno.writeTextFile(
    config,
    inventory.replace(
      'internal_ips = ["10.250.0.12"]',
      'internal_ips = ["10.250.0.12"]\nstate = "retired"',
    ),
  );
  const { code, out, err } = await runCli(["keepalived", "--config", config, "--host", "cp-2"]);
  assert.equal(code, 0, err);
  assert.doesNotMatch(out, /vrrp_instance|global_defs/);
  assert.match(out, /^# No VRRP instance/m);
  assert.match(err, /Host "cp-2" serves no VIP through keepalived \(machine "cp-2" is retired in /);
  assert.equal(out, await announced(config, [service("web", ["10.250.0.150"])], "cp-2"));
  // the active host still renders its instances
  const active = await runCli(["keepalived", "--config", config, "--host", "cp-1"]);
  assert.equal(active.code, 0);
  assert.match(active.out, /vrrp_instance keelson_cp_v4 \{/);
});

Deno.test("renderCommand exits 1 naming an unknown host, a worker and a bad snapshot", async () => {
  const { config, state } = await fixture([]);
  const unknown = await runCli(["keepalived", "-c", config, "--host", "cp-9"]);
  assert.equal(unknown.code, 1);
  assert.match(unknown.err, /host "cp-9".*no machine of that name.*"cp-1", "cp-2"/);
  const worker = await runCli(["keepalived", "-c", config, "--host", "w-1"]);
  assert.equal(worker.code, 1);
  assert.match(worker.err, /host "w-1": its role is "worker"/);
  await Deno.writeTextFile(state, "kind: [unclosed");
  const bad = await runCli(["keepalived", "-c", config, "-s", state, "--host", "cp-1"]);
  assert.equal(bad.code, 1);
  assert.match(bad.err, /Cannot parse cluster state .*state\.json/);
  for (const r of [unknown, worker, bad]) {
    assert.equal(r.out, "");
    assert.doesNotMatch(r.err, /^\s+at /m);
  }
});

Deno.test("renderCommand exits 1 for an invalid inventory or keepalived turned off", async () => {
  const { config } = await fixture([]);
  await Deno.writeTextFile(config, INVENTORY.replace('interface = "eth0"', 'interface = "Eth 0"'));
  const invalid = await runCli(["keepalived", "-c", config, "--host", "cp-1"]);
  assert.equal(invalid.code, 1);
  assert.match(invalid.err, /keepalived\.interface/);
  await Deno.writeTextFile(
    config,
    INVENTORY.replace("[keepalived]", "[keepalived]\nenabled = false"),
  );
  const off = await runCli(["keepalived", "-c", config, "--host", "cp-1"]);
  assert.equal(off.code, 1);
  assert.match(off.err, /enabled = false/);
});

Deno.test("renderCommand throws UsageError for a wrong command line", async () => {
  await assert.rejects(renderCommand(["--config", "x.toml", "--host", "cp-1"]), UsageError);
  await assert.rejects(
    renderCommand(["nginx", "--config", "x.toml", "--host", "cp-1"]),
    UsageError,
  );
  await assert.rejects(renderCommand(["keepalived", "--config", "x.toml", "--bogus"]), UsageError);
  const { code, err } = await runCli(["keepalived", "--config", "x.toml"]);
  assert.equal(code, 2);
  assert.match(err, /--host NAME is required/);
});

Deno.test("renderCommand --help prints the usage and exits 0", async () => {
  const { code, out } = await runCli(["--help"]);
  assert.equal(code, 0);
  assert.match(out, /Usage: keelson render keepalived --config FILE --host NAME/);
});

Deno.test("renderCommand names the notify FIFO's user with --fifo-user and refuses a bad one", async () => {
  const { config } = await fixture([]);
  const { code, out } = await runCli([
    "keepalived",
    "--config",
    config,
    "--host",
    "cp-1",
    "--fifo-user",
    "kee_lson",
  ]);
  assert.equal(code, 0);
  assert.match(
    out,
    /vrrp_notify_fifo "\/run\/keelson-daemons\/keepalived-notify\.fifo" kee_lson\n/,
  );
  const bad = await runCli(["keepalived", "-c", config, "--host", "cp-1", "--fifo-user", "x y"]);
  assert.equal(bad.code, 2);
});
