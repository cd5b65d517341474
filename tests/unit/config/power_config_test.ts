/**
 * The `[power]` table: its defaults (off; with the switch on, power-off to taint well under 30 s)
 * and what `keelson check` refuses, with the file, line and key.
 */
import assert from "node:assert/strict";
import { ConfigError } from "../../../src/config/config_error.ts";
import { parseConfig } from "../../../src/config/parse_config.ts";
import { powerPolicyFromConfig } from "../../../src/controllers/out_of_service/out_of_service_controller.ts";

const MACHINE = '[[machines]]\nname = "w-1"\ninternal_ips = ["10.0.0.21"]\n';

Deno.test("[power] defaults: out_of_service off, confirm_off_for 5s, kubelet_lease_silence 15s, fencing dry-run after 5m, 2 actions per 1m", () => {
  const config = parseConfig(MACHINE, "k.toml");
  assert.deepEqual(powerPolicyFromConfig(config), {
    enabled: false,
    confirmOffMs: 5_000,
    fencing: "dry-run",
    fenceAfterMs: 300_000,
    leaseSilenceMs: 15_000,
    maxActionsPerInterval: 2,
    actionIntervalMs: 60_000,
  });
  const on = parseConfig(
    '[power]\nout_of_service = true\nconfirm_off_for = "3s"\nfencing = "on"\n' +
      'kubelet_lease_silence = "0s"\n' +
      'fence_after = "2m"\nmax_actions_per_interval = 0\naction_interval = "10m"\n' + MACHINE,
    "k.toml",
  );
  assert.deepEqual(powerPolicyFromConfig(on), {
    enabled: true,
    confirmOffMs: 3_000,
    fencing: "on",
    fenceAfterMs: 120_000,
    leaseSilenceMs: 0,
    maxActionsPerInterval: 0,
    actionIntervalMs: 600_000,
  });
});

Deno.test("[power]: keelson check refuses out-of-bounds values with the file, line and key", () => {
  const cases: [string, string, RegExp][] = [
    ['confirm_off_for = "0s"', "power.confirm_off_for", /between 1s and 1h/],
    ['confirm_off_for = "2h"', "power.confirm_off_for", /between 1s and 1h/],
    ['fence_after = "10s"', "power.fence_after", /between 30s and 24h/],
    [
      'kubelet_lease_silence = "11s"',
      "power.kubelet_lease_silence",
      /"0s" \(off\) or at least 12s/,
    ],
    ['kubelet_lease_silence = "11m"', "power.kubelet_lease_silence", /between 0s and 10m/],
    ["kubelet_lease_silence = 15", "power.kubelet_lease_silence", /must be a string/],
    ['fencing = "yes"', "power.fencing", /off|dry-run|on/],
    ["max_actions_per_interval = -1", "power.max_actions_per_interval", />=|at least|0/],
    ["max_actions_per_interval = 5000", "power.max_actions_per_interval", /no rate limit/],
    ['action_interval = "0s"', "power.action_interval", /between 1s and 24h/],
    ['out_of_service = "yes"', "power.out_of_service", /must be true or false/],
    ["unknown_key = 1", "power.unknown_key", /unknown key; allowed keys: out_of_service/],
  ];
  for (const [line, path, words] of cases) {
    let error: unknown;
    try {
      parseConfig(`[power]\n${line}\n${MACHINE}`, "k.toml");
    } catch (e) {
      error = e;
    }
    assert.ok(error instanceof ConfigError, `${line} was accepted`);
    const issue = error.issues.find((i) => i.path === path);
    assert.ok(issue, `${line}: no issue at ${path}: ${error.format()}`);
    assert.equal(issue.line, 2, `${line}: line`);
    assert.match(issue.message, words, line);
    assert.match(error.format(), /k\.toml:2/, line);
  }
});

Deno.test("[power]: fencing written while out_of_service is false is refused as inert, at fencing's line", () => {
  // before: accepted, and nothing was ever fenced (fencing is a step of the out-of-service path)
  for (
    const text of [
      'fencing = "on"',
      'fencing = "dry-run"',
      'out_of_service = false\nfencing = "on"',
    ]
  ) {
    let error: unknown;
    try {
      parseConfig(`[power]\n${text}\n${MACHINE}`, "k.toml");
    } catch (e) {
      error = e;
    }
    assert.ok(error instanceof ConfigError, `${text} was accepted`);
    assert.equal(error.issues.length, 1, error.format());
    const issue = error.issues[0]!;
    assert.equal(issue.path, "power.fencing", text);
    assert.equal(issue.line, text.split("\n").length + 1, text);
    assert.match(issue.message, /but out_of_service is false, so nothing would ever be fenced/);
  }
  // the default (dry-run, not written), "off", and fencing with the switch on stay accepted
  for (
    const text of [
      "",
      'fencing = "off"',
      'out_of_service = true\nfencing = "on"',
      'out_of_service = true\nfencing = "dry-run"',
    ]
  ) {
    parseConfig(`[power]\n${text}\n${MACHINE}`, "k.toml");
  }
});
