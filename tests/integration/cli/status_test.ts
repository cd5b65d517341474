import assert from "node:assert/strict";

const ROOT = new URL("../../../", import.meta.url).pathname;

async function runCli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; out: string; err: string }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-env", "--allow-net", "main.ts", "status", ...args],
    cwd: ROOT,
    env: { NO_COLOR: "1", KUBECONFIG: "", ...env },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: output.code, out: decode(output.stdout), err: decode(output.stderr) };
}

Deno.test("keelson status --help explains the flags and exit codes", async () => {
  const { code, out } = await runCli(["--help"]);
  assert.equal(code, 0);
  assert.match(out, /--output FORMAT/);
  assert.match(out, /3 problems found/);
  assert.match(out, /--observe DURATION/);
});

Deno.test("keelson status refuses a wrong command line with exit 2", async () => {
  const bad = await runCli(["--output", "yaml"]);
  assert.equal(bad.code, 2);
  assert.match(bad.err, /--output must be text or json, not "yaml"/);
  assert.equal((await runCli(["extra"])).code, 2);
  for (const observe of ["soon", "1.5.s", "11m"]) {
    const wrong = await runCli(["--observe", observe]);
    assert.equal(wrong.code, 2, observe);
    assert.match(wrong.err, /--observe must be a duration of at most 10m/);
  }
});

Deno.test("keelson status says why it cannot reach the cluster, with exit 1", async () => {
  const missing = await runCli(["--kubeconfig", "/nonexistent/kubeconfig"]);
  assert.equal(missing.code, 1);
  assert.match(missing.err, /^keelson status: Cannot read kubeconfig "\/nonexistent\/kubeconfig"/);
  const none = await runCli([]);
  assert.equal(none.code, 1);
  assert.match(none.err, /Cannot find a Kubernetes connection/);
  const badConfig = await runCli(["--config", "/nonexistent/keelson.toml"]);
  assert.equal(badConfig.code, 1);
  assert.match(badConfig.err, /keelson status: .*nonexistent\/keelson\.toml/);
});

Deno.test("useColor() is on only on a terminal and never with NO_COLOR", async () => {
  const { useColor } = await import("../../../src/cli/status.ts");
  const saved = Deno.env.get("NO_COLOR");
  try {
    Deno.env.set("NO_COLOR", "1");
    assert.equal(useColor(), false);
    Deno.env.delete("NO_COLOR");
    assert.equal(useColor(), Deno.stdout.isTerminal());
  } finally {
    if (saved === undefined) Deno.env.delete("NO_COLOR");
    else Deno.env.set("NO_COLOR", saved);
  }
});

Deno.test("keelson status reads ~/.kube/config as kubectl does, and --context picks the context", async () => {
  const home = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${home}/.kube`);
    await Deno.copyFile(
      new URL("../../unit/kube/testdata/kubeconfig/token.yaml", import.meta.url).pathname,
      `${home}/.kube/config`,
    );
    // HOME moves Deno's cache too; keep the one this test runs from
    const denoDir = Deno.env.get("DENO_DIR") ??
      `${Deno.env.get("XDG_CACHE_HOME") ?? `${Deno.env.get("HOME")}/.cache`}/deno`;
    const wrong = await runCli(["--context", "nope"], { HOME: home, DENO_DIR: denoDir });
    assert.equal(wrong.code, 1);
    assert.equal(
      wrong.err.trim(),
      `keelson status: Cannot use kubeconfig "${home}/.kube/config": context "nope" is not in ` +
        'contexts (known: "main", "other")',
    );
    assert.match((await runCli(["--help"])).out, /~\/\.kube\/config/);
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});
