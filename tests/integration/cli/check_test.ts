import assert from "node:assert/strict";
import { checkCommand } from "../../../src/cli/check.ts";
import { UsageError } from "../../../src/cli/usage_error.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;
const EXAMPLE = `${ROOT}deploy/examples/keelson.toml`;
const BROKEN = `${ROOT}tests/unit/config/testdata/bad_cidr.toml`;

/** Runs `deno run main.ts check ...` as a user would, capturing both streams. */
async function runCli(args: string[], env: Record<string, string> = {}) {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-env", "main.ts", "check", ...args],
    cwd: ROOT,
    env: { NO_COLOR: "1", ...env },
    clearEnv: false,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
}

function assertNoStackTrace(text: string): void {
  assert.doesNotMatch(text, /^\s+at /m, `stack trace in:\n${text}`);
}

Deno.test("checkCommand() returns 0 for the example inventory", async () => {
  assert.equal(await checkCommand(["--config", EXAMPLE]), 0);
});

Deno.test("checkCommand() returns 1 for a broken file", async () => {
  assert.equal(await checkCommand(["-c", BROKEN]), 1);
});

Deno.test("checkCommand() returns 1 for a missing file", async () => {
  assert.equal(await checkCommand(["-c", `${ROOT}does-not-exist.toml`]), 1);
});

Deno.test("checkCommand() throws UsageError without --config", async () => {
  const saved = Deno.env.get("KEELSON_CONFIG");
  Deno.env.delete("KEELSON_CONFIG");
  try {
    await assert.rejects(checkCommand([]), UsageError);
    await assert.rejects(checkCommand(["--colour"]), UsageError);
  } finally {
    if (saved !== undefined) Deno.env.set("KEELSON_CONFIG", saved);
  }
});

Deno.test("checkCommand() prints help and returns 0 with --help", async () => {
  assert.equal(await checkCommand(["--help"]), 0);
});

Deno.test("keelson check prints the summary and exits 0 for a valid file", async () => {
  const result = await runCli(["--config", "deploy/examples/keelson.toml"]);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /^deploy\/examples\/keelson\.toml: OK\nCluster "dc1-prod"/);
});

Deno.test("keelson check prints every issue on stdout and exits 1 for a broken file", async () => {
  const result = await runCli(["-c", "tests/unit/config/testdata/vip_in_pool.toml"]);
  assert.equal(result.code, 1);
  const lines = result.stdout.trim().split("\n");
  assert.deepEqual(lines.map((l) => l.split(": ")[0]), [
    "tests/unit/config/testdata/vip_in_pool.toml:2",
    "tests/unit/config/testdata/vip_in_pool.toml:2",
    "tests/unit/config/testdata/vip_in_pool.toml:11",
    "tests/unit/config/testdata/vip_in_pool.toml",
  ]);
  assert.match(lines[3]!, /3 problems found$/);
  assertNoStackTrace(result.stdout + result.stderr);
});

Deno.test("keelson check exits 1 without a stack trace for a missing file", async () => {
  const result = await runCli(["-c", "nope.toml"]);
  assert.equal(result.code, 1);
  assert.match(result.stdout, /^nope\.toml: Cannot read the configuration file: no such file/);
  assertNoStackTrace(result.stdout + result.stderr);
});

Deno.test("keelson check falls back to KEELSON_CONFIG and exits 2 with no file at all", async () => {
  const fromEnv = await runCli([], { KEELSON_CONFIG: "deploy/examples/keelson.toml" });
  assert.equal(fromEnv.code, 0, fromEnv.stderr);
  const none = await runCli([], { KEELSON_CONFIG: "" });
  assert.equal(none.code, 2);
  assert.match(none.stderr, /--config FILE is required/);
  assertNoStackTrace(none.stderr);
});

Deno.test("keelson check refuses paths the binary may not write, naming file, line and the allowed directories", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/keelson.toml`;
    await Deno.writeTextFile(
      file,
      `[keepalived]
interface = "eth0"
config_file = "/etc/keepalived/keelson.conf"

[bgp]
asn = 64512
socket = "/var/run/bird.ctl"

[[machines]]
name = "cp-1"
role = "control-plane"
internal_ips = ["10.0.0.11"]
`,
    );
    const result = await runCli(["-c", file]);
    assert.equal(result.code, 1);
    const allowed = "is outside the directories the keelson binary may write: only under " +
      "/etc/keepalived/conf.d, /run/keelson, /run/keelson-daemons, /etc/keelson/bird, /run/bird " +
      "(its permissions are fixed when it is built, scripts/compile_permissions.txt); use a path under one of them " +
      '(docs/security.md "Permissions")';
    assert.equal(
      result.stdout,
      `${file}:3: keepalived.config_file: "/etc/keepalived/keelson.conf" ${allowed}\n` +
        `${file}:7: bgp.socket: "/var/run/bird.ctl" ${allowed}\n` +
        `${file}: 2 problems found\n`,
    );
    assertNoStackTrace(result.stdout + result.stderr);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
