import assert from "node:assert/strict";
import {
  KubeconfigError,
  parseKubeconfig,
  resolveConnectionSettings,
} from "../../../src/kube/kubeconfig.ts";

const DIR = new URL("../../unit/kube/testdata/kubeconfig/", import.meta.url).pathname;
const fixture = (name: string) => `${DIR}${name}`;
const CA = Deno.readTextFileSync(fixture("ca.crt"));
const CERT = Deno.readTextFileSync(fixture("client.crt"));
const KEY = Deno.readTextFileSync(fixture("client.key"));
const noEnv = () => undefined;

async function load(name: string, context?: string) {
  return await resolveConnectionSettings({
    kubeconfig: fixture(name),
    getEnv: noEnv,
    ...(context ? { context } : {}),
  });
}

async function rejectsWith(promise: Promise<unknown>, ...parts: (string | RegExp)[]) {
  await assert.rejects(promise, (error: Error) => {
    assert.ok(error instanceof KubeconfigError, `expected KubeconfigError, got ${error.name}`);
    for (const part of parts) {
      if (typeof part === "string") assert.ok(error.message.includes(part), error.message);
      else assert.match(error.message, part);
    }
    assert.doesNotMatch(error.message, /s3cr3t/, "a secret leaked into the message");
    assert.doesNotMatch(error.message, /\.$/, "messages have no trailing period");
    return true;
  });
}

Deno.test("resolveConnectionSettings() reads a token kubeconfig with certificate-authority-data", async () => {
  const settings = await load("token.yaml");
  assert.deepEqual(settings, {
    server: "https://10.0.0.10:6443",
    caPem: CA,
    token: "s3cr3t-static-token",
    namespace: "kube-system",
    source: `kubeconfig "${fixture("token.yaml")}" context "main"`,
  });
});

Deno.test("resolveConnectionSettings() reads kubeadm-style client-certificate-data and client-key-data", async () => {
  const settings = await load("cert.yaml");
  assert.equal(settings.clientCertPem, CERT);
  assert.equal(settings.clientKeyPem, KEY);
  assert.equal(settings.token, undefined);
});

Deno.test("resolveConnectionSettings() resolves certificate, key, CA and tokenFile paths relative to the kubeconfig", async () => {
  const settings = await load("files.yaml");
  assert.equal(settings.caPem, CA);
  assert.equal(settings.clientCertPem, CERT);
  assert.equal(settings.clientKeyPem, KEY);
  assert.equal(settings.tokenFile, fixture("token"));
});

Deno.test("resolveConnectionSettings() refuses a tls-server-name other than the server's host", async () => {
  await rejectsWith(
    load("tls_server_name.yaml"),
    'tls-server-name "kubernetes.default"',
    "server URL",
  );
});

Deno.test("resolveConnectionSettings() reads basic auth username and password", async () => {
  const settings = await load("basic.yaml");
  assert.equal(settings.username, "admin");
  assert.equal(settings.password, "s3cr3t-password");
});

Deno.test("resolveConnectionSettings() uses the given context instead of current-context", async () => {
  const settings = await load("token.yaml", "other");
  assert.equal(settings.token, "other-token");
  assert.equal(settings.namespace, undefined);
  assert.match(settings.source, /context "other"$/);
});

Deno.test("resolveConnectionSettings() refuses exec plugins naming file, context and user", async () => {
  await rejectsWith(load("exec.yaml"), fixture("exec.yaml"), 'context "main"', 'user "u1"', "exec");
});

Deno.test("resolveConnectionSettings() refuses auth-provider plugins", async () => {
  await rejectsWith(load("auth_provider.yaml"), "auth-provider", "tokenFile");
});

Deno.test("resolveConnectionSettings() refuses insecure-skip-tls-verify and says to set the CA", async () => {
  await rejectsWith(
    load("insecure.yaml"),
    "insecure-skip-tls-verify",
    "certificate-authority-data",
  );
});

Deno.test("resolveConnectionSettings() fails when current-context is not set", async () => {
  await rejectsWith(load("no_context.yaml"), fixture("no_context.yaml"), "current-context");
});

Deno.test("resolveConnectionSettings() fails on an unknown context and lists the known ones", async () => {
  await rejectsWith(load("token.yaml", "nope"), 'context "nope"', '"main", "other"');
});

Deno.test("resolveConnectionSettings() fails on a client certificate without its key", async () => {
  await rejectsWith(load("cert_without_key.yaml"), "client-certificate and client-key");
});

Deno.test("resolveConnectionSettings() fails on bad YAML naming the file", async () => {
  await rejectsWith(load("bad_yaml.yaml"), `Cannot parse kubeconfig "${fixture("bad_yaml.yaml")}"`);
});

Deno.test("resolveConnectionSettings() fails on a missing file naming it", async () => {
  await rejectsWith(load("missing.yaml"), fixture("missing.yaml"), "does not exist");
});

Deno.test("resolveConnectionSettings() takes the first file of $KUBECONFIG", async () => {
  const env = { KUBECONFIG: `${fixture("cert.yaml")}:${fixture("token.yaml")}` };
  const settings = await resolveConnectionSettings({ getEnv: (name) => env[name as "KUBECONFIG"] });
  assert.equal(settings.clientCertPem, CERT);
});

Deno.test("resolveConnectionSettings() prefers the explicit path over $KUBECONFIG and in-cluster", async () => {
  const env: Record<string, string> = {
    KUBECONFIG: fixture("cert.yaml"),
    KUBERNETES_SERVICE_HOST: "10.96.0.1",
    KUBERNETES_SERVICE_PORT: "443",
  };
  const settings = await resolveConnectionSettings({
    kubeconfig: fixture("token.yaml"),
    getEnv: (name) => env[name],
  });
  assert.equal(settings.token, "s3cr3t-static-token");
});

Deno.test("resolveConnectionSettings() falls back to the in-cluster ServiceAccount", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/token`, "sa-token");
    await Deno.writeTextFile(`${dir}/ca.crt`, CA);
    await Deno.writeTextFile(`${dir}/namespace`, "kube-system\n");
    const env: Record<string, string> = {
      KUBERNETES_SERVICE_HOST: "fd00::1",
      KUBERNETES_SERVICE_PORT: "443",
    };
    const settings = await resolveConnectionSettings({
      getEnv: (name) => env[name],
      serviceAccountDir: dir,
    });
    assert.deepEqual(settings, {
      server: "https://[fd00::1]:443",
      caPem: CA,
      tokenFile: `${dir}/token`,
      namespace: "kube-system",
      source: "in-cluster",
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("resolveConnectionSettings() fails in-cluster when the token is missing", async () => {
  const env: Record<string, string> = {
    KUBERNETES_SERVICE_HOST: "10.96.0.1",
    KUBERNETES_SERVICE_PORT: "443",
  };
  await rejectsWith(
    resolveConnectionSettings({
      getEnv: (name) => env[name],
      serviceAccountDir: "/nonexistent-sa",
    }),
    "in-cluster",
    "/nonexistent-sa/token",
  );
});

Deno.test("resolveConnectionSettings() fails with guidance when nothing is configured", async () => {
  await rejectsWith(resolveConnectionSettings({ getEnv: noEnv }), "--kubeconfig", "KUBECONFIG");
});

Deno.test("parseKubeconfig() refuses a server that is not http(s)", async () => {
  const text = [
    "current-context: x",
    "contexts: [{name: x, context: {cluster: c, user: u}}]",
    "clusters: [{name: c, cluster: {server: 'ftp://h'}}]",
    "users: [{name: u, user: {}}]",
  ].join("\n");
  await rejectsWith(parseKubeconfig(text, "inline.yaml"), 'cluster.server "ftp://h"');
});

/** A kubeconfig in `dir` whose user and cluster name the given files. */
async function kubeconfigNaming(
  dir: string,
  files: { ca?: string; cert?: string; key?: string; tokenFile?: string },
): Promise<string> {
  const path = `${dir}/kubeconfig`;
  await Deno.writeTextFile(
    path,
    [
      "current-context: x",
      "contexts: [{name: x, context: {cluster: c, user: u}}]",
      `clusters: [{name: c, cluster: {server: 'https://10.0.0.10:6443', certificate-authority: ${
        JSON.stringify(files.ca ?? fixture("ca.crt"))
      }}}]`,
      `users: [{name: u, user: {${
        [
          files.cert ? `client-certificate: ${JSON.stringify(files.cert)}` : "",
          files.key ? `client-key: ${JSON.stringify(files.key)}` : "",
          files.tokenFile ? `tokenFile: ${JSON.stringify(files.tokenFile)}` : "",
        ].filter((l) => l).join(", ")
      }}}]`,
    ].join("\n"),
  );
  return path;
}

Deno.test("resolveConnectionSettings() refuses a kubeconfig, token, CA, certificate or key that is not a regular file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const fifo = `${dir}/fifo`;
    assert.ok((await new Deno.Command("mkfifo", { args: [fifo] }).output()).success);
    for (const special of ["/dev/zero", fifo]) {
      // before: /dev/zero grew the process by about 1.5 GB a second; a FIFO never answered
      await rejectsWith(
        resolveConnectionSettings({ kubeconfig: special, getEnv: noEnv }),
        `Cannot read kubeconfig "${special}": is not a regular file`,
      );
      const cases: [keyof Parameters<typeof kubeconfigNaming>[1], string][] = [
        ["tokenFile", "tokenFile"],
        ["ca", "certificate-authority"],
        ["cert", "client-certificate"],
        ["key", "client-key"],
      ];
      for (const [what, field] of cases) {
        const files = what === "cert" || what === "key"
          ? { cert: fixture("client.crt"), key: fixture("client.key"), [what]: special }
          : { [what]: special };
        const kubeconfig = await kubeconfigNaming(dir, files);
        await rejectsWith(
          resolveConnectionSettings({ kubeconfig, getEnv: noEnv }),
          `cannot read ${field} "${special}": is not a regular file`,
        );
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("resolveConnectionSettings() refuses a kubeconfig over 1 MiB and a token file over 64 KiB", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const big = `${dir}/big`;
    await Deno.writeFile(big, new Uint8Array(1024 * 1024 + 1).fill(0x20));
    await rejectsWith(
      resolveConnectionSettings({ kubeconfig: big, getEnv: noEnv }),
      "is larger than 1 MiB",
    );
    const token = `${dir}/token`;
    await Deno.writeFile(token, new Uint8Array(64 * 1024 + 1).fill(0x61));
    await rejectsWith(
      resolveConnectionSettings({
        kubeconfig: await kubeconfigNaming(dir, { tokenFile: token }),
        getEnv: noEnv,
      }),
      `cannot read tokenFile "${token}": is larger than 64 KiB`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** A scratch directory with files, removed after `body`. */
async function withFiles(
  files: Record<string, string>,
  body: (dir: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir();
  try {
    for (const [name, text] of Object.entries(files)) {
      await Deno.mkdir(`${dir}/${name}`.replace(/\/[^/]*$/, ""), { recursive: true });
      await Deno.writeTextFile(`${dir}/${name}`, text);
    }
    await body(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("resolveConnectionSettings() with kubectlDefaults reads ~/.kube/config before in-cluster", async () => {
  await withFiles(
    { ".kube/config": Deno.readTextFileSync(fixture("token.yaml")) },
    async (home) => {
      const env: Record<string, string> = {
        HOME: home,
        KUBERNETES_SERVICE_HOST: "10.96.0.1",
        KUBERNETES_SERVICE_PORT: "443",
      };
      const settings = await resolveConnectionSettings({
        kubectlDefaults: true,
        getEnv: (name) => env[name],
      });
      assert.equal(settings.token, "s3cr3t-static-token");
      assert.equal(settings.source, `kubeconfig "${home}/.kube/config" context "main"`);
      // the agent (upstream CCM behaviour) does not look there
      await rejectsWith(
        resolveConnectionSettings({ getEnv: (name) => env[name], serviceAccountDir: home }),
        "Cannot use the in-cluster ServiceAccount",
      );
    },
  );
});

Deno.test("resolveConnectionSettings() with kubectlDefaults and no ~/.kube/config says it looked there", async () => {
  await withFiles({}, async (home) => {
    const env: Record<string, string> = { HOME: home };
    await rejectsWith(
      resolveConnectionSettings({ kubectlDefaults: true, getEnv: (name) => env[name] }),
      "~/.kube/config does not exist",
    );
  });
});

Deno.test("resolveConnectionSettings() merges $KUBECONFIG as kubectl: missing files skipped, first definition wins, paths relative to their file", async () => {
  await withFiles({
    "a/config": [
      "current-context: from-a",
      "contexts:",
      "  - name: from-a",
      "    context: { cluster: c1, user: u1 }",
      "clusters:",
      "  - name: c1",
      "    cluster: { server: https://a.example:6443 }",
    ].join("\n"),
    "b/config": [
      "current-context: from-b",
      "clusters:",
      "  - name: c1",
      "    cluster: { server: https://b.example:6443 }",
      "users:",
      "  - name: u1",
      "    user: { tokenFile: token }",
    ].join("\n"),
    "b/token": "from-b-token\n",
  }, async (dir) => {
    const env = { KUBECONFIG: `${dir}/missing:${dir}/a/config::${dir}/b/config` };
    const settings = await resolveConnectionSettings({
      getEnv: (name) => env[name as "KUBECONFIG"],
    });
    assert.equal(settings.server, "https://a.example:6443");
    assert.equal(settings.tokenFile, `${dir}/b/token`);
    assert.equal(settings.source, `kubeconfig "${dir}/a/config" context "from-a"`);
    await rejectsWith(
      resolveConnectionSettings({ getEnv: (name) => env[name as "KUBECONFIG"], context: "nope" }),
      `kubeconfig files "${dir}/a/config", "${dir}/b/config" ($KUBECONFIG)`,
      'context "nope" is not in contexts (known: "from-a")',
    );
    const none = { KUBECONFIG: `${dir}/x:${dir}/y` };
    await rejectsWith(
      resolveConnectionSettings({ getEnv: (name) => none[name as "KUBECONFIG"] }),
      /none of its files exists/,
    );
  });
});

Deno.test("every kubeconfig read error names the file exactly once", async () => {
  await withFiles({ "dir/x": "" }, async (dir) => {
    const cases: [string, (path: string) => Promise<string>][] = [
      [
        `${dir}/missing`,
        (path) => Promise.reject(new Deno.errors.NotFound(`No such file: ${path}`)),
      ],
      [
        `${dir}/dir`,
        (path) =>
          import("../../../src/files/read_input_file.ts").then((m) => m.readInputFile(path)),
      ],
      [`${dir}/denied`, (path) =>
        Promise.reject(
          new Deno.errors.NotCapable(
            `Requires read access to "${path}", run again with the --allow-read flag`,
          ),
        )],
    ];
    for (const [path, readTextFile] of cases) {
      await assert.rejects(
        resolveConnectionSettings({ kubeconfig: path, getEnv: noEnv, readTextFile }),
        (error: Error) => {
          assert.ok(error instanceof KubeconfigError, error.message);
          assert.equal(error.message.split(path).length - 1, 1, error.message);
          assert.match(error.message, /^Cannot read kubeconfig "/);
          return true;
        },
      );
    }
  });
});
