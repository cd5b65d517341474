/**
 * `keelson check` and the command line as they ship (the bundle with the baked permission and V8
 * flags): the TLS pair and the BMC's CA are loaded by the TLS library under exactly those
 * permissions (a loader needing one more would fail here, not on a host), and a mistyped command
 * or flag, a hexadecimal port and `run --help` read as an operator sees them.
 *
 * Before: check said OK to a key of another certificate, swapped files, a garbage CA and an
 * endpoint ending in "?"; `chek` and `--conifg` got no suggestion; `--secure-port 0x4e2a` was
 * taken as port 20010; `run --help` named five controllers of seven.
 */
import assert from "node:assert/strict";
import { keelsonCommand } from "./_harness/shipped_keelson.ts";

const MACHINE = '[[machines]]\nname = "w-1"\ninternal_ips = ["10.0.0.21"]\n';

async function keelson(args: string[]): Promise<{ code: number; out: string }> {
  const [command, ...rest] = await keelsonCommand(args);
  const output = await new Deno.Command(command!, {
    args: rest,
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: output.code, out: decode(output.stdout) + decode(output.stderr) };
}

async function openssl(dir: string, args: string[]): Promise<void> {
  const output = await new Deno.Command("openssl", { args, cwd: dir, stdin: "null" }).output();
  assert.ok(output.success, new TextDecoder().decode(output.stderr));
}

async function selfSigned(dir: string, name: string): Promise<void> {
  await openssl(dir, [
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
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
}

Deno.test("the shipped check loads the server's key pair and the BMC's CA as run would", async () => {
  const dir = await Deno.makeTempDir({ prefix: "keelson-check-shipped-" });
  try {
    await Deno.chmod(dir, 0o755);
    await selfSigned(dir, "a");
    await selfSigned(dir, "b");
    const config = `${dir}/keelson.toml`;
    const server = (cert: string, key: string) =>
      `[server]\ntls_cert_file = "${dir}/${cert}"\ntls_key_file = "${dir}/${key}"\n${MACHINE}`;

    await Deno.writeTextFile(config, server("a.crt", "a.key"));
    const good = await keelson(["check", "--config", config]);
    assert.equal(good.code, 0, good.out);

    await Deno.writeTextFile(config, server("a.crt", "b.key"));
    const mismatch = await keelson(["check", "--config", config]);
    assert.equal(mismatch.code, 1, mismatch.out);
    assert.ok(
      mismatch.out.includes(
        `${config}:3: server.tls_key_file: "${dir}/b.key" is not the private key of the ` +
          `certificate in "${dir}/a.crt"`,
      ),
      mismatch.out,
    );

    await Deno.writeTextFile(config, MACHINE);
    const swapped = await keelson([
      "check",
      "--config",
      config,
      `--tls-cert-file=${dir}/a.key`,
      `--tls-private-key-file=${dir}/a.crt`,
    ]);
    assert.equal(swapped.code, 1, swapped.out);
    assert.match(swapped.out, /--tls-cert-file: ".*a\.key" holds a private key, not a certificate/);

    await Deno.writeTextFile(`${dir}/user`, "admin\n", { mode: 0o600 });
    await Deno.writeTextFile(`${dir}/password`, "s3cret\n", { mode: 0o600 });
    await Deno.writeTextFile(
      `${dir}/ca.pem`,
      "-----BEGIN CERTIFICATE-----\nMIIBfakeCAfakeCAfake\n-----END CERTIFICATE-----\n",
    );
    const bmcTable = (endpoint: string) =>
      `${MACHINE}\n[machines.bmc]\nendpoint = "${endpoint}"\n` +
      `username_file = "${dir}/user"\npassword_file = "${dir}/password"\n` +
      `ca_file = "${dir}/ca.pem"\n`;
    await Deno.writeTextFile(config, bmcTable("https://10.0.9.11?"));
    const endpoint = await keelson(["check", "--config", config]);
    assert.equal(endpoint.code, 1, endpoint.out);
    assert.match(
      endpoint.out,
      /:6: machines\[0\]\.bmc\.endpoint: "https:\/\/10\.0\.9\.11\?" holds a query or fragment/,
    );
    await Deno.writeTextFile(config, bmcTable("https://10.0.9.11"));
    const ca = await keelson(["check", "--config", config]);
    assert.equal(ca.code, 1, ca.out);
    assert.match(
      ca.out,
      /:9: machines\[0\]\.bmc\.ca_file: ".*ca\.pem" holds a certificate that cannot be parsed/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the shipped command line suggests the command or flag meant, refuses a hex port and lists every controller", async () => {
  const command = await keelson(["chek", "--config", "x"]);
  assert.equal(command.code, 2, command.out);
  assert.match(command.out, /unknown command "chek"; did you mean "check"\?/);

  const flag = await keelson(["check", "--conifg", "x"]);
  assert.equal(flag.code, 2, flag.out);
  assert.match(flag.out, /unknown flag "--conifg"; did you mean "--config"\?/);

  const port = await keelson(["run", "--config", "x", "--secure-port", "0x4e2a"]);
  assert.equal(port.code, 2, port.out);
  assert.match(port.out, /--secure-port "0x4e2a" is not a positive whole number in decimal/);

  const help = await keelson(["run", "--help"]);
  assert.equal(help.code, 0, help.out);
  for (const controller of ["vip-host", "out-of-service", "pv-labels", "cloud-node-lifecycle"]) {
    assert.ok(help.out.includes(controller), `${controller} in:\n${help.out}`);
  }
});
