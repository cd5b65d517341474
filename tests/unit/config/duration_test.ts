import assert from "node:assert/strict";
import { buildKeepalivedModel } from "../../../providers/baremetal/keepalived/model.ts";
import { parseRunFlags } from "../../../src/cli/run_flags.ts";
import { ConfigError } from "../../../src/config/config_error.ts";
import { type Duration, parseDuration } from "../../../src/config/duration.ts";
import { parseConfig, validateConfig } from "../../../src/config/parse_config.ts";
import type { Config } from "../../../src/config/types.ts";

const MACHINE = '[[machines]]\nname = "cp-1"\nrole = "control-plane"\n' +
  'internal_ips = ["10.0.0.11"]\n';

/** A Duration as a plain `{ text, ms }`, for deepEqual. */
function plain(d: Duration): { text: string; ms: number } {
  return { text: d.text, ms: d.ms };
}

/** Every duration of a Config, by its TOML name. */
function durations(config: Config): Record<string, { text: string; ms: number }> {
  return {
    "leader_election.lease_duration": plain(config.leader_election.lease_duration),
    "leader_election.renew_deadline": plain(config.leader_election.renew_deadline),
    "leader_election.retry_period": plain(config.leader_election.retry_period),
    "controllers.node_status_update_frequency": plain(
      config.controllers.node_status_update_frequency,
    ),
    "controllers.node_monitor_period": plain(config.controllers.node_monitor_period),
    "controllers.route_reconciliation_period": plain(
      config.controllers.route_reconciliation_period,
    ),
    "node_lifecycle.deletion_interval": plain(config.node_lifecycle.deletion_interval),
    "keepalived.advert_interval": plain(config.keepalived.advert_interval),
    "control_plane.health_interval": plain(config.control_plane.health_interval),
    "control_plane.health_timeout": plain(config.control_plane.health_timeout),
  };
}

Deno.test("parseDuration() reads each unit, decimals as whole ms, and refuses other text", () => {
  const cases: [string, number | undefined][] = [
    ["200ms", 200],
    ["15s", 15_000],
    ["1.5s", 1500],
    ["0.1s", 100],
    ["5m", 300_000],
    ["1h", 3_600_000],
    ["15", undefined],
    ["15 s", undefined],
    ["-1s", undefined],
    ["1d", undefined],
    ["", undefined],
  ];
  for (const [text, ms] of cases) {
    const parsed = parseDuration(text);
    assert.deepEqual(parsed && plain(parsed), ms === undefined ? undefined : { text, ms }, text);
  }
});

Deno.test("parseConfig() carries every duration as its text and its milliseconds", () => {
  const defaults = parseConfig(MACHINE, "k.toml");
  assert.deepEqual(durations(defaults), {
    "leader_election.lease_duration": { text: "15s", ms: 15_000 },
    "leader_election.renew_deadline": { text: "10s", ms: 10_000 },
    "leader_election.retry_period": { text: "2s", ms: 2000 },
    "controllers.node_status_update_frequency": { text: "5m", ms: 300_000 },
    "controllers.node_monitor_period": { text: "5s", ms: 5000 },
    "controllers.route_reconciliation_period": { text: "10s", ms: 10_000 },
    "node_lifecycle.deletion_interval": { text: "1m", ms: 60_000 },
    "keepalived.advert_interval": { text: "200ms", ms: 200 },
    "control_plane.health_interval": { text: "1s", ms: 1000 },
    "control_plane.health_timeout": { text: "1s", ms: 1000 },
  });
  const written = parseConfig(
    '[leader_election]\nlease_duration = "0.5m"\n' +
      '[controllers]\nnode_status_update_frequency = "1.5h"\n' +
      '[keepalived]\nadvert_interval = "1.25s"\n' +
      '[control_plane]\nhealth_timeout = "250ms"\n' + MACHINE,
    "k.toml",
  );
  const got = durations(written);
  assert.deepEqual(got["leader_election.lease_duration"], { text: "0.5m", ms: 30_000 });
  assert.deepEqual(got["controllers.node_status_update_frequency"], {
    text: "1.5h",
    ms: 5_400_000,
  });
  assert.deepEqual(got["keepalived.advert_interval"], { text: "1.25s", ms: 1250 });
  assert.deepEqual(got["control_plane.health_timeout"], { text: "250ms", ms: 250 });
});

Deno.test("validateConfig() of a config with the duration flags applied carries the flags' ms", () => {
  const flags = parseRunFlags([
    "--leader-elect-lease-duration",
    "1m",
    "--leader-elect-renew-deadline",
    "45000ms",
    "--node-monitor-period",
    "0.5m",
  ], () => undefined);
  const config = validateConfig(flags.apply(parseConfig(MACHINE, "k.toml")), "k.toml + flags");
  const got = durations(config);
  assert.deepEqual(got["leader_election.lease_duration"], { text: "1m", ms: 60_000 });
  assert.deepEqual(got["leader_election.renew_deadline"], { text: "45000ms", ms: 45_000 });
  assert.deepEqual(got["controllers.node_monitor_period"], { text: "0.5m", ms: 30_000 });
  assert.deepEqual(got["leader_election.retry_period"], { text: "2s", ms: 2000 }, "the file's");
});

Deno.test("validateConfig() checks a flag's duration against the file's bounds and rules", () => {
  const file = parseConfig(MACHINE, "k.toml");
  const tooShort = parseRunFlags(["--node-monitor-period", "100ms"], () => undefined);
  assert.throws(
    () => validateConfig(tooShort.apply(file), "k.toml + flags"),
    (error: unknown) =>
      error instanceof ConfigError &&
      /controllers\.node_monitor_period: "100ms" must be between 1s and 1h/.test(error.format()),
  );
  // lease_duration must stay above renew_deadline: the cross-field check sees the flag's value
  const shortLease = parseRunFlags(["--leader-elect-lease-duration", "5s"], () => undefined);
  assert.throws(
    () => validateConfig(shortLease.apply(file), "k.toml + flags"),
    (error: unknown) =>
      error instanceof ConfigError &&
      /leader_election\.lease_duration: "5s" must be longer than renew_deadline "10s"/.test(
        error.format(),
      ),
  );
});

Deno.test("validateConfig() reads a Duration again from its text, never trusting its ms", () => {
  const file = parseConfig(MACHINE, "k.toml");
  const forged = structuredClone(file);
  (forged.controllers as { node_monitor_period: unknown }).node_monitor_period = {
    text: "7s",
    ms: 1,
  };
  const config = validateConfig(forged, "forged");
  assert.deepEqual(plain(config.controllers.node_monitor_period), { text: "7s", ms: 7000 });
});

Deno.test("a use site reads the parsed ms, not the text (keepalived's advert_int)", () => {
  const config = parseConfig('[keepalived]\nadvert_interval = "1.5s"\n' + MACHINE, "k.toml");
  // the text is for people only: the model is built from the milliseconds the schema parsed
  const textless = structuredClone(config);
  (textless.keepalived as { advert_interval: unknown }).advert_interval = {
    ...config.keepalived.advert_interval,
    text: "(not read)",
  };
  const model = buildKeepalivedModel({ config: textless, host: "cp-1", serviceVips: [] });
  assert.ok(!("error" in model));
  assert.equal(model.advertIntMs, 1500);
});
