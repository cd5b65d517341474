import assert from "node:assert/strict";
import { hostIdentityProblem } from "../../../src/config/host_identity.ts";
import { parseConfig } from "../../../src/config/parse_config.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;
const INVENTORY = `[keepalived]
enabled = true

[[machines]]
name = "cp-2"
role = "control-plane"

[[machines]]
name = "cp-1"
role = "control-plane"

[[machines]]
name = "w-1"
`;

async function keelson(args: string[], dir: string) {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "main.ts", ...args],
    cwd: ROOT,
    env: { NO_COLOR: "1", KUBECONFIG: `${dir}/none` },
    stdout: "piped",
    stderr: "piped",
    // before the fix the agent started and ran: the bound ends it, and the test fails
    signal: AbortSignal.timeout(60_000),
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: output.code, out: text(output.stdout), err: text(output.stderr) };
}

Deno.test("run: a host name that is no machine of the inventory fails at start, naming the name, the control-plane machines and --host", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/keelson.toml`;
    await Deno.writeTextFile(path, INVENTORY);
    const result = await keelson(
      ["run", "--config", path, "--host", "keelson-vm", "--listen", "127.0.0.1:0"],
      dir,
    );
    assert.equal(result.code, 1, result.err);
    assert.equal(
      result.err.trim(),
      `keelson run: This host's name "keelson-vm" (from --host or KEELSON_HOST) is no machine of ` +
        `the inventory ${path}; its control-plane machines are cp-1, cp-2. Give this host's ` +
        `machine name with --host NAME (or KEELSON_HOST=NAME in the unit's environment), or add a ` +
        `[[machines]] entry named after it.`,
    );
    assert.doesNotMatch(result.err + result.out, /systemctl disable/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("check --host: the same error for a name that is no machine; a worker or control-plane machine passes", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/keelson.toml`;
    await Deno.writeTextFile(path, INVENTORY);
    const bad = await keelson(["check", "--config", path, "--host", "keelson-vm"], dir);
    assert.equal(bad.code, 1, bad.err);
    assert.match(bad.out, /--host: This host's name "keelson-vm" .* cp-1, cp-2\. Give this host's/);
    for (const host of ["cp-1", "w-1"]) {
      const good = await keelson(["check", "--config", path, "--host", host], dir);
      assert.equal(good.code, 0, good.out + good.err);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("hostIdentityProblem(): an unreadable name and the OS's name say so; an inventory without control-plane machines too", () => {
  const config = parseConfig('[[machines]]\nname = "w-1"\n', "k.toml");
  assert.equal(hostIdentityProblem(config, "w-1", "os", "k.toml"), undefined);
  assert.match(
    hostIdentityProblem(config, "", "os", "k.toml")!,
    /^This host's name could not be read from the operating system; it lists no control-plane machine\. Give/,
  );
  assert.match(
    hostIdentityProblem(config, "vm\x1b[2J", "os", "k.toml")!,
    /^This host's name "vm\\x1b\[2J" \(the operating system's host name\) is no machine/,
  );
});
