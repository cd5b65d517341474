import assert from "node:assert/strict";
import { parseRunFlags } from "../../../src/cli/run_flags.ts";
import { UsageError } from "../../../src/cli/usage_error.ts";
import { parseConfig } from "../../../src/config/parse_config.ts";

const noEnv = () => undefined;

Deno.test("parseRunFlags() overrides the file with upstream-named flags", () => {
  const config = parseConfig(
    '[keepalived]\nenabled = false\n[[machines]]\nname = "w-1"\n',
    "k.toml",
  );
  const flags = parseRunFlags([
    "--config",
    "k.toml",
    "--controllers",
    "*,-service",
    "--leader-elect=false",
    "--bind-address",
    "0.0.0.0",
    "--secure-port",
    "9999",
    "--kube-api-qps",
    "50",
    "--route-reconciliation-period",
    "30s",
    "-v",
    "4",
  ], noEnv);
  const applied = flags.apply(config);
  assert.deepEqual(applied.controllers.enabled, ["*", "-service"]);
  assert.equal(applied.leader_election.enabled, false);
  assert.equal(applied.server.listen, "0.0.0.0:9999");
  assert.equal(applied.kubernetes.qps, 50);
  // the flag is parsed by the schema's parser into the Config's representation
  assert.deepEqual(
    { ...applied.controllers.route_reconciliation_period },
    { text: "30s", ms: 30_000 },
  );
  assert.deepEqual(
    { ...config.controllers.route_reconciliation_period },
    { text: "10s", ms: 10_000 },
    "upstream's default",
  );
  assert.equal(flags.logLevel, "trace");
  assert.equal(config.leader_election.enabled, true, "the loaded config is not mutated");
});

Deno.test("parseRunFlags() refuses values it cannot use, naming the flag", () => {
  assert.throws(() => parseRunFlags(["--controllers", "nodes"], noEnv), UsageError);
  assert.throws(() => parseRunFlags(["--leader-elect=yes"], noEnv), /--leader-elect "yes"/);
  assert.throws(() => parseRunFlags(["--kube-api-burst", "1.5"], noEnv), /whole number/);
  assert.throws(() => parseRunFlags(["--node-monitor-period", "5"], noEnv), /duration/);
  assert.throws(
    () => parseRunFlags(["--route-reconciliation-period", "often"], noEnv),
    /--route-reconciliation-period/,
  );
  assert.throws(() => parseRunFlags(["--bogus"], noEnv), UsageError);
});

Deno.test("parseConfig() refuses an unknown controller name instead of running none", () => {
  assert.throws(
    () =>
      parseConfig('[keepalived]\nenabled = false\n[controllers]\nenabled = ["nodes"]\n', "k.toml"),
    /k\.toml:4: controllers\.enabled\[0\]: "nodes" is not a controller \(known: /,
  );
});

const MINIMAL = '[keepalived]\nenabled = false\n[[machines]]\nname = "w-1"\n';

/** The UsageError message of a command line. */
function refusal(args: string[]): string {
  try {
    parseRunFlags(args, noEnv);
  } catch (error) {
    if (error instanceof UsageError) return error.message;
    throw error;
  }
  return assert.fail(`accepted ${args.join(" ")}`);
}

Deno.test("parseRunFlags(): --leader-elect is a boolean flag as upstream's: bare means true, =false turns it off", () => {
  const config = parseConfig(`[leader_election]\nenabled = false\n${MINIMAL}`, "k.toml");
  const on = (args: string[]) => parseRunFlags(args, noEnv).apply(config).leader_election.enabled;
  assert.equal(on(["--leader-elect"]), true);
  assert.equal(on(["--leader-elect", "--host", "cp-1"]), true);
  assert.equal(on(["--leader-elect", "-v", "2"]), true);
  assert.equal(on(["--leader-elect=true"]), true);
  assert.equal(on(["--leader-elect=false"]), false);
  assert.equal(on(["--leader-elect=0"]), false);
  assert.match(refusal(["--leader-elect=maybe"]), /--leader-elect "maybe" must be true or false/);
  // pflag takes no separate value for a boolean: "false" would be an argument, never a value
  assert.equal(
    refusal(["--leader-elect", "false"]),
    'keelson run takes no arguments, got "false"; a bare --leader-elect means true, so write ' +
      "--leader-elect=false",
  );
});

Deno.test("parseRunFlags(): --cloud-provider=baremetal is accepted; other values and other upstream flags are refused in Keelson's words", () => {
  const config = parseConfig(MINIMAL, "k.toml");
  assert.equal(
    parseRunFlags(["--cloud-provider=baremetal"], noEnv).apply(config).cluster.provider,
    "baremetal",
  );
  parseRunFlags(["--cloud-provider", "baremetal", "--leader-elect-resource-lock=leases"], noEnv);
  assert.equal(
    refusal(["--cloud-provider=external"]),
    '--cloud-provider="external" names the provider; Keelson has one, "baremetal" ([cluster] ' +
      "provider in the inventory): drop the flag or write --cloud-provider=baremetal",
  );
  assert.match(
    refusal(["--cloud-config=/etc/ccm.conf"]),
    /Keelson reads its inventory from --config FILE/,
  );
  assert.match(refusal(["--configure-cloud-routes=false"]), /--controllers/);
  assert.match(refusal(["--use-service-account-credentials"]), /identity of --kubeconfig/);
  // not an upstream flag at all: one plain sentence, no parser text, balanced quotes
  assert.equal(refusal(["--no-such-flag"]), 'unknown flag "--no-such-flag"');
  assert.equal(refusal(["--config"]), "--config needs a value: --config VALUE or --config=VALUE");
  assert.equal(
    refusal(["--host", "--config", "x"]),
    "--host needs a value, and the next argument is a flag; write --host=VALUE",
  );
  assert.equal(refusal(["--help=1"]), "--help takes no value");
});

Deno.test("parseRunFlags(): --secure-port serves HTTPS, so it needs a certificate; --listen is the plain-HTTP way", () => {
  const plain = parseConfig(MINIMAL, "k.toml");
  const secure = parseRunFlags(["--secure-port", "10258"], noEnv);
  assert.equal(
    secure.problem(secure.apply(plain)),
    "--secure-port 10258 serves HTTPS, as upstream's does, and needs a certificate: add " +
      "--tls-cert-file and --tls-private-key-file (or [server] tls_cert_file and tls_key_file); " +
      "for plain HTTP use --listen HOST:PORT instead",
  );
  const withCert = parseRunFlags([
    "--secure-port=10258",
    "--tls-cert-file=/etc/keelson/tls.crt",
    "--tls-private-key-file=/etc/keelson/tls.key",
  ], noEnv);
  const applied = withCert.apply(plain);
  assert.equal(withCert.problem(applied), undefined);
  assert.equal(applied.server.tls_cert_file, "/etc/keelson/tls.crt");
  assert.equal(applied.server.tls_key_file, "/etc/keelson/tls.key");
  assert.equal(applied.server.listen, "127.0.0.1:10258");
  const listen = parseRunFlags(["--listen", "127.0.0.1:9000"], noEnv);
  assert.equal(listen.problem(listen.apply(plain)), undefined);
});

Deno.test("run --help names KEELSON_HOST (the in-cluster manifest sets it) and render --help names render bird", async () => {
  const { RUN_USAGE } = await import("../../../src/cli/run_flags.ts");
  assert.match(RUN_USAGE, /KEELSON_HOST/);
  const manifest = await Deno.readTextFile(
    new URL("../../../deploy/kubernetes/keelson.yaml", import.meta.url),
  );
  assert.match(manifest, /KEELSON_HOST/, "the manifest this help text is for");
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-env", "main.ts", "render", "--help"],
    cwd: new URL("../../../", import.meta.url).pathname,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const help = new TextDecoder().decode(output.stdout);
  assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
  assert.match(help, /render bird/);
  assert.match(help, /render keepalived/);
});

Deno.test("parseRunFlags(): ports and counts are decimal digits only (Number() took hex, exponents, spaces and signs)", () => {
  // before: --secure-port 0x4e2a bound 20010, 1e3 bound 1000, " 10258" bound 10258
  const cert = ["--tls-cert-file=/c", "--tls-private-key-file=/k"];
  for (
    const bad of [
      "0x4e2a",
      "1e3",
      " 10258",
      "10258 ",
      "+1",
      "10258.0",
      "0b1",
      "0o17",
      "",
      "65536",
      "0",
    ]
  ) {
    assert.match(
      refusal(["--secure-port", bad, ...cert]),
      /^--secure-port ".*" is not a positive whole number in decimal digits up to 65535$/,
      JSON.stringify(bad),
    );
  }
  for (
    const flag of ["--kube-api-burst", "--concurrent-node-syncs", "--concurrent-service-syncs"]
  ) {
    for (const bad of ["0x10", "1e1", " 5", "+5", "5.0"]) {
      assert.match(refusal([flag, bad]), /is not a positive whole number in decimal digits/, flag);
    }
  }
  for (const bad of ["0x10", "1e1", " 5", "+5", "Infinity", "5."]) {
    assert.match(refusal(["--kube-api-qps", bad]), /is not a positive number in decimal digits/);
  }
  const plain = parseConfig(MINIMAL, "k.toml");
  const flags = parseRunFlags(["--secure-port", "10258", "--kube-api-qps", "2.5", ...cert], noEnv);
  const applied = flags.apply(plain);
  assert.equal(applied.server.listen, "127.0.0.1:10258");
  assert.equal(applied.kubernetes.qps, 2.5);
  assert.match(refusal(["--log-level", "11"]), /--log-level "11" must be one of/);
  assert.equal(parseRunFlags(["-v", "10"], noEnv).logLevel, "trace");
});
