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
    "--leader-elect",
    "false",
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
  assert.throws(() => parseRunFlags(["--leader-elect", "yes"], noEnv), /--leader-elect "yes"/);
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
