import assert from "node:assert/strict";
import { ConfigError } from "../../../src/config/config_error.ts";
import { loadConfigFile } from "../../../src/config/load_config.ts";

const MACHINE = '\n[[machines]]\nname = "w-1"\n';
const CA = new URL("../../unit/kube/testdata/kubeconfig/ca.crt", import.meta.url).pathname;
const BGP_BASE = await Deno.readTextFile(
  new URL("../../unit/config/bgp/base.toml", import.meta.url),
);

interface Scratch extends AsyncDisposable {
  dir: string;
  fifo: string;
}

async function scratch(): Promise<Scratch> {
  const dir = await Deno.makeTempDir();
  const fifo = `${dir}/fifo`;
  assert.ok((await new Deno.Command("mkfifo", { args: [fifo] }).output()).success, "mkfifo");
  return { dir, fifo, [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }) };
}

/** Loads `text` as `run` and `check` do; the issues, or [] when it loads. */
async function issuesOf(
  dir: string,
  text: string,
  options: Parameters<typeof loadConfigFile>[1] = { namedFiles: true },
): Promise<{ line?: number; path: string; message: string }[]> {
  const path = `${dir}/keelson.toml`;
  await Deno.writeTextFile(path, text);
  const started = performance.now();
  const error = await loadConfigFile(path, options).then(() => undefined, (e) => e);
  const ms = performance.now() - started;
  // generous: a refused FIFO or device is refused before it is opened, not at a deadline
  assert.ok(ms < 4_000, `loading took ${ms} ms`);
  if (error === undefined) return [];
  assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${error}`);
  return error.issues.map((i) => ({
    ...(i.line !== undefined ? { line: i.line } : {}),
    path: i.path,
    message: i.message,
  }));
}

async function kubeconfigNaming(dir: string, user: string): Promise<string> {
  const path = `${dir}/kubeconfig`;
  await Deno.writeTextFile(
    path,
    [
      "current-context: x",
      "contexts: [{name: x, context: {cluster: c, user: u}}]",
      `clusters: [{name: c, cluster: {server: 'https://10.0.0.10:6443', certificate-authority: ${CA}}}]`,
      `users: [{name: u, user: {${user}}}]`,
    ].join("\n"),
  );
  return path;
}

Deno.test("check and run refuse a metrics token, TLS file or kubeconfig that is a FIFO, a device or a directory", async () => {
  await using s = await scratch();
  for (const special of [s.fifo, "/dev/zero", s.dir]) {
    const why = special === s.dir ? /is a directory$/ : /is not a regular file \(a FIFO/;
    for (
      const [table, key] of [
        ["server", "metrics_token_file"],
        ["server", "tls_cert_file"],
        ["kubernetes", "kubeconfig"],
      ] as const
    ) {
      const other = key === "tls_cert_file" ? `\ntls_key_file = "${CA}"` : "";
      const text = `[${table}]\n${key} = "${special}"${other}\n${MACHINE}`;
      // before: check said OK to every one of them
      const issues = await issuesOf(s.dir, text);
      assert.equal(issues.length, 1, `${key} = ${special}: ${JSON.stringify(issues)}`);
      assert.equal(issues[0]!.line, 2, key);
      assert.equal(issues[0]!.path, `${table}.${key}`);
      assert.ok(issues[0]!.message.startsWith(`cannot read "${special}": `), issues[0]!.message);
      assert.match(issues[0]!.message, why);
    }
  }
});

Deno.test("check and run refuse a kubeconfig whose tokenFile is a FIFO or /dev/zero", async () => {
  // its CA, certificate and key files: tests/integration/kube/kubeconfig_test.ts
  await using s = await scratch();
  for (const special of [s.fifo, "/dev/zero"]) {
    const kubeconfig = await kubeconfigNaming(s.dir, `tokenFile: ${special}`);
    const issues = await issuesOf(s.dir, `[kubernetes]\nkubeconfig = "${kubeconfig}"\n${MACHINE}`);
    assert.equal(issues.length, 1, JSON.stringify(issues));
    assert.equal(issues[0]!.path, "kubernetes.kubeconfig");
    assert.match(
      issues[0]!.message,
      new RegExp(`cannot read tokenFile "${special}": is not a regular file`),
    );
  }
});

Deno.test("a kubeconfig that does not exist yet is no error (it is written after the VIP is up)", async () => {
  await using s = await scratch();
  const text = `[kubernetes]\nkubeconfig = "${s.dir}/not-yet"\n${MACHINE}`;
  assert.deepEqual(await issuesOf(s.dir, text), []);
});

Deno.test("check and run refuse an empty or unusable metrics token and a TLS file without PEM", async () => {
  await using s = await scratch();
  await Deno.writeTextFile(`${s.dir}/empty`, "\n");
  await Deno.writeTextFile(`${s.dir}/spaced`, "two words\n");
  await Deno.writeTextFile(`${s.dir}/good`, "t0ken\n");
  const token = (file: string) => `[server]\nmetrics_token_file = "${file}"\n${MACHINE}`;
  // not there yet: /metrics stays closed until it is (fail closed at run time, as before)
  assert.deepEqual(await issuesOf(s.dir, token(`${s.dir}/none`)), []);
  assert.match((await issuesOf(s.dir, token(`${s.dir}/empty`)))[0]!.message, /is empty/);
  assert.match((await issuesOf(s.dir, token(`${s.dir}/spaced`)))[0]!.message, /cannot carry/);
  assert.deepEqual(await issuesOf(s.dir, token(`${s.dir}/good`)), []);
  const tls = `[server]\ntls_cert_file = "${s.dir}/good"\ntls_key_file = "${CA}"\n${MACHINE}`;
  const issues = await issuesOf(s.dir, tls);
  assert.deepEqual(issues.map((i) => [i.line, i.path]), [[2, "server.tls_cert_file"]]);
  assert.match(issues[0]!.message, /holds no PEM certificate/);
  const missing = `[server]\ntls_cert_file = "${s.dir}/none"\ntls_key_file = "${CA}"\n${MACHINE}`;
  assert.match((await issuesOf(s.dir, missing))[0]!.message, /no such file/i);
});

Deno.test("plan and render (no namedFiles) do not read the agent's files", async () => {
  await using s = await scratch();
  const text = `[server]\nmetrics_token_file = "${s.fifo}"\n${MACHINE}`;
  assert.deepEqual(await issuesOf(s.dir, text, {}), []);
});

Deno.test("a file the command-line flags replace is not checked as the inventory's", async () => {
  await using s = await scratch();
  const text = `[kubernetes]\nkubeconfig = "/dev/zero"\n${MACHINE}`;
  const issues = await issuesOf(s.dir, text, {
    namedFiles: true,
    apply: (config) => ({
      ...config,
      kubernetes: { ...config.kubernetes, kubeconfig: `${s.dir}/flag-kubeconfig` },
    }),
  });
  assert.deepEqual(issues, []);
});

Deno.test("a BGP password_file that is a FIFO or /dev/zero is refused at once, naming its line", async () => {
  await using s = await scratch();
  for (const special of [s.fifo, "/dev/zero"]) {
    const text = BGP_BASE.replace("bfd = true", `bfd = true\npassword_file = "${special}"`);
    // before: a FIFO never finished loading; /dev/zero grew the process by about 1.5 GB a second
    const issues = await issuesOf(s.dir, text, {});
    assert.equal(issues.length, 1, JSON.stringify(issues));
    assert.equal(issues[0]!.path, "bgp.peers[0].password_file");
    assert.equal(issues[0]!.line, text.split("\n").indexOf(`password_file = "${special}"`) + 1);
    assert.match(
      issues[0]!.message,
      new RegExp(`^cannot read "${special}": is not a regular file .* \\(peer "tor-a"\\)$`),
    );
  }
  await Deno.writeTextFile(`${s.dir}/long`, "x".repeat(5000));
  await Deno.chmod(`${s.dir}/long`, 0o600);
  const text = BGP_BASE.replace("bfd = true", `bfd = true\npassword_file = "${s.dir}/long"`);
  assert.match((await issuesOf(s.dir, text, {}))[0]!.message, /is larger than 4 KiB/);
});
