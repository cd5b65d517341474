/**
 * The health server's certificate and key as `check`, `run` and the server load them: files that
 * do not match, are swapped, encrypted, garbage or of a key type the TLS library does not take are
 * refused naming the file and the problem, by `check` with `--config` alone ([server] keys), by
 * `check` given `run`'s `--tls-cert-file`/`--tls-private-key-file`, and by `run` before it starts
 * anything. And the parity that makes `check`'s OK mean something: for every pair, the loader
 * accepts exactly what `Deno.serve` (the server `run` starts) accepts.
 */
import assert from "node:assert/strict";
import { checkCommand } from "../../../src/cli/check.ts";
import { runCommand } from "../../../src/cli/run.ts";
import { ConfigError } from "../../../src/config/config_error.ts";
import { loadConfigFile } from "../../../src/config/load_config.ts";
import { readTlsKeyPair, TlsKeyPairError } from "../../../src/config/tls_key_pair.ts";

const MACHINE = '[[machines]]\nname = "w-1"\ninternal_ips = ["10.0.0.21"]\n';

async function openssl(dir: string, args: string[]): Promise<void> {
  const output = await new Deno.Command("openssl", { args, cwd: dir, stdin: "null" }).output();
  assert.ok(output.success, new TextDecoder().decode(output.stderr));
}

/** Pairs of every shape, written into `dir`; the names are file names there. */
async function pairs(dir: string): Promise<Record<string, [cert: string, key: string]>> {
  const selfSigned = (name: string, newkey: string[]) =>
    openssl(dir, [
      "req",
      "-x509",
      "-newkey",
      ...newkey,
      "-nodes",
      "-days",
      "2",
      "-subj",
      `/CN=${name}`,
      "-keyout",
      `${name}.key`,
      "-out",
      `${name}.crt`,
    ]);
  await selfSigned("ec", ["ec", "-pkeyopt", "ec_paramgen_curve:P-256"]);
  await selfSigned("rsa", ["rsa:2048"]);
  await selfSigned("k1", ["ec", "-pkeyopt", "ec_paramgen_curve:secp256k1"]);
  await openssl(dir, ["pkey", "-in", "ec.key", "-aes256", "-passout", "pass:x", "-out", "enc.key"]);
  await openssl(dir, ["rsa", "-in", "rsa.key", "-traditional", "-out", "rsa1.key"]);
  await openssl(dir, [
    "rsa",
    "-in",
    "rsa.key",
    "-traditional",
    "-aes256",
    "-passout",
    "pass:x",
    "-out",
    "rsa1enc.key",
  ]);
  const cert = await Deno.readTextFile(`${dir}/ec.crt`);
  // a line of the base64 lost (a bad copy and paste): PEM framing intact, DER cut short
  const lines = cert.split("\n");
  await Deno.writeTextFile(
    `${dir}/garbled.crt`,
    [...lines.slice(0, 3), ...lines.slice(4)].join("\n"),
  );
  await Deno.writeTextFile(
    `${dir}/garbage.crt`,
    "-----BEGIN CERTIFICATE-----\nMIIBfakeCAfakeCAfake\n-----END CERTIFICATE-----\n",
  );
  await Deno.writeTextFile(`${dir}/chain.crt`, cert + await Deno.readTextFile(`${dir}/rsa.crt`));
  return {
    ok: ["ec.crt", "ec.key"],
    rsa: ["rsa.crt", "rsa.key"],
    rsaPkcs1: ["rsa.crt", "rsa1.key"],
    chain: ["chain.crt", "ec.key"],
    mismatch: ["ec.crt", "rsa.key"],
    swapped: ["ec.key", "ec.crt"],
    encrypted: ["ec.crt", "enc.key"],
    encryptedPkcs1: ["rsa.crt", "rsa1enc.key"],
    garbage: ["garbage.crt", "ec.key"],
    garbled: ["garbled.crt", "ec.key"],
    unsupportedCurve: ["k1.crt", "k1.key"],
  };
}

async function withPairs(
  body: (dir: string, all: Record<string, [string, string]>) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "keelson-tls-" });
  try {
    await body(dir, await pairs(dir));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Whether `Deno.serve` starts with this pair (what `run`'s server does). */
async function serves(cert: string, key: string): Promise<boolean> {
  const aborter = new AbortController();
  try {
    const server = Deno.serve({
      hostname: "127.0.0.1",
      port: 0,
      cert,
      key,
      signal: aborter.signal,
      onListen: () => {},
    }, () => new Response("ok"));
    aborter.abort();
    await server.finished;
    return true;
  } catch {
    return false;
  }
}

Deno.test("readTlsKeyPair accepts exactly the pairs Deno.serve serves with", async () => {
  await withPairs(async (dir, all) => {
    const verdicts: Record<string, [loader: boolean, server: boolean]> = {};
    for (const [name, [cert, key]] of Object.entries(all)) {
      const loaded = await readTlsKeyPair(`${dir}/${cert}`, `${dir}/${key}`)
        .then(() => true, (error) => {
          assert.ok(error instanceof TlsKeyPairError, `${name}: ${error}`);
          return false;
        });
      const server = await serves(
        await Deno.readTextFile(`${dir}/${cert}`),
        await Deno.readTextFile(`${dir}/${key}`),
      );
      verdicts[name] = [loaded, server];
    }
    for (const [name, [loaded, server]] of Object.entries(verdicts)) {
      assert.equal(loaded, server, `${name}: loader ${loaded}, Deno.serve ${server}`);
    }
    // the cases are not all one verdict
    assert.deepEqual(
      Object.entries(verdicts).filter(([, [ok]]) => ok).map(([name]) => name).sort(),
      ["chain", "ok", "rsa", "rsaPkcs1"],
    );
  });
});

Deno.test("readTlsKeyPair names the file and the problem of each bad pair", async () => {
  await withPairs(async (dir, all) => {
    const expected: Record<string, [field: string, message: RegExp]> = {
      mismatch: [
        "tls_key_file",
        /rsa\.key" is not the private key of the certificate in ".*ec\.crt"/,
      ],
      swapped: [
        "tls_cert_file",
        /ec\.key" holds a private key, not a certificate: .* look swapped/,
      ],
      encrypted: ["tls_key_file", /enc\.key" is encrypted, and Keelson asks for no passphrase/],
      encryptedPkcs1: ["tls_key_file", /rsa1enc\.key" is encrypted/],
      garbage: [
        "tls_cert_file",
        /garbage\.crt" holds a certificate that cannot be parsed \(certificate 1, line 1: /,
      ],
      garbled: ["tls_cert_file", /garbled\.crt" holds a certificate that cannot be parsed/],
      unsupportedCurve: ["tls_key_file", /cannot be served with: .*\(RSA, ECDSA P-256/],
    };
    for (const [name, [field, message]] of Object.entries(expected)) {
      const [cert, key] = all[name]!;
      const error = await readTlsKeyPair(`${dir}/${cert}`, `${dir}/${key}`).then(
        () => undefined,
        (e) => e,
      );
      assert.ok(error instanceof TlsKeyPairError, `${name}: ${error}`);
      assert.equal(error.field, field, name);
      assert.match(error.message, message, name);
    }
  });
});

Deno.test("check refuses [server] tls_cert_file and tls_key_file that do not match, at the key's line", async () => {
  await withPairs(async (dir, all) => {
    const config = `${dir}/keelson.toml`;
    for (const name of ["mismatch", "swapped", "encrypted", "garbage"]) {
      const [cert, key] = all[name]!;
      await Deno.writeTextFile(
        config,
        `[server]\ntls_cert_file = "${dir}/${cert}"\ntls_key_file = "${dir}/${key}"\n${MACHINE}`,
      );
      // before: check said OK to each (it looked for a "-----BEGIN " line only)
      const error = await loadConfigFile(config, { namedFiles: true }).then(
        () => undefined,
        (e) => e,
      );
      assert.ok(error instanceof ConfigError, `${name}: ${error}`);
      assert.equal(error.issues.length, 1, name);
      const issue = error.issues[0]!;
      assert.equal(issue.line, issue.path === "server.tls_cert_file" ? 2 : 3, name);
      assert.equal(await checkCommand(["--config", config]), 1, name);
    }
    const [cert, key] = all.ok!;
    await Deno.writeTextFile(
      config,
      `[server]\ntls_cert_file = "${dir}/${cert}"\ntls_key_file = "${dir}/${key}"\n${MACHINE}`,
    );
    assert.equal(await checkCommand(["--config", config]), 0);
  });
});

Deno.test("check given run's --tls-cert-file/--tls-private-key-file refuses what run refuses, and run refuses it before starting", async () => {
  await withPairs(async (dir, all) => {
    const config = `${dir}/keelson.toml`;
    await Deno.writeTextFile(config, MACHINE);
    const flags = (name: string) => {
      const [cert, key] = all[name]!;
      return [`--tls-cert-file=${dir}/${cert}`, `--tls-private-key-file=${dir}/${key}`];
    };
    for (const name of ["mismatch", "swapped", "encrypted", "garbage", "unsupportedCurve"]) {
      assert.equal(await checkCommand(["--config", config, ...flags(name)]), 1, name);
      // run exits 1 at once: it never gets to logging, serving or connecting
      const started = performance.now();
      assert.equal(
        await runCommand(["--config", config, "--listen", "127.0.0.1:0", ...flags(name)]),
        1,
        name,
      );
      assert.ok(performance.now() - started < 10_000, name);
    }
    assert.equal(await checkCommand(["--config", config, ...flags("ok")]), 0);
    // a flag replacing one file of the inventory's pair: the pair run would make is checked
    const [cert, key] = all.ok!;
    await Deno.writeTextFile(
      config,
      `[server]\ntls_cert_file = "${dir}/${cert}"\ntls_key_file = "${dir}/${key}"\n${MACHINE}`,
    );
    assert.equal(await checkCommand(["--config", config]), 0);
    assert.equal(
      await checkCommand(["--config", config, `--tls-private-key-file=${dir}/rsa.key`]),
      1,
    );
    // one flag alone, with no file in the inventory to pair it with
    await Deno.writeTextFile(config, MACHINE);
    assert.equal(await checkCommand(["--config", config, `--tls-cert-file=${dir}/${cert}`]), 1);
  });
});
