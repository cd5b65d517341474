/**
 * Text from the API reaches the operator as data: a leader Lease's holderIdentity, a Service's
 * pool annotation and an unknown key in a heartbeat report's entry holding terminal escapes are shown
 * escaped by `keelson status` (text), kept exact by `--output json`; `check` and the text logs do
 * the same with values from the inventory and from log properties.
 */
// deno-lint-ignore-file no-control-regex -- the tests look for control characters
import assert from "node:assert/strict";
import { formatStatusJson, formatStatusText } from "../../../src/status/format_status.ts";
import {
  heartbeatLease,
  lbService,
  leaderLease,
  NOW,
  report,
  statusOf,
} from "../../unit/status/_leases.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;

/** What a terminal acts on: C0 but newline, DEL, C1. */
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;
/** Every escape sequence in `text` is one of our colour codes. */
function onlyColourCodes(text: string): boolean {
  return text.replace(/\x1b\[[0-9;]*m/g, "").match(CONTROL) === null;
}

const FORGED_HOLDER = "\x1b]0;pwned\x07\x1b[2J\x1b[H\x1b[32mHealthy: every VIP is served\x1b[0m\n";
// Deno.inspect escapes C0 and C1 in a string, not the line separator or a bidi override
const FORGED_LOG = `${FORGED_HOLDER}\u20282026-01-01 00:00:00.000 [INF] forged\u202e`;
const FORGED_POOL = "lan\x1b[2J\u009b31m\u202e";

function hostileStatus() {
  // an unknown key inside a pool entry (strict there; unknown top-level keys are dropped)
  const base = report("cp-2", []);
  const unknownKey = JSON.stringify({
    ...base,
    pools: [{ pool: "lan", family: "IPv4", total: 1, used: 0, "\x1b]2;title\x07": 1 }],
  });
  const leader = leaderLease(FORGED_HOLDER);
  return statusOf({
    services: [lbService("shop", "web", ["10.0.0.150"], FORGED_POOL)],
    leases: [
      heartbeatLease("cp-1", report("cp-1", ["10.0.0.150"])),
      heartbeatLease("cp-2", unknownKey),
      leader,
    ],
    leaderLease: leader,
    nowMs: NOW,
  });
}

Deno.test("keelson status text: holderIdentity, pool annotation and report keys are shown escaped", () => {
  const status = hostileStatus();
  for (const color of [false, true]) {
    const text = formatStatusText(status, { color });
    assert.ok(color ? onlyColourCodes(text) : !CONTROL.test(text), JSON.stringify(text));
    assert.match(text, /Leader:(\x1b\[0m)? \\x1b\]0;pwned\\x07\\x1b\[2J\\x1b\[H\\x1b\[32mHealthy/);
    assert.match(text, /lan\\x1b\[2J\\x9b31m\\u202e/);
    assert.match(text, /\\x1b\]2;title\\x07/);
    // the forged "Healthy" stays inside the leader's line: no line starts with it
    assert.doesNotMatch(text, /^(\x1b\[[0-9;]*m)?Healthy/m);
  }
});

Deno.test("keelson status JSON: the same values, exact, with no raw control character", () => {
  const status = hostileStatus();
  const json = formatStatusJson(status);
  assert.ok(!/[\u007f-\u009f\u202a-\u202e]/.test(json) && !CONTROL.test(json.replaceAll("\n", "")));
  const parsed = JSON.parse(json);
  assert.equal(parsed.leader.identity, FORGED_HOLDER);
  assert.equal(parsed.vips[0].pool, FORGED_POOL);
  assert.deepEqual(parsed, JSON.parse(JSON.stringify(status)));
});

Deno.test("keelson check: a control character in a value is shown escaped, on its issue's line", async () => {
  const dir = await Deno.makeTempDir({ prefix: "keelson-hostile-check-" });
  try {
    const file = `${dir}/k.toml`;
    await Deno.writeTextFile(
      file,
      '[cluster]\nname = "a\\u001b]0;x\\u0007\\nk.toml:9: fine"\n[[pools]]\nname = "p"\n' +
        'addresses = ["10.0.0.1\\u009b2J\\u001b[2J"]\n',
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-read", "--allow-env", "main.ts", "check", "-c", file],
      cwd: ROOT,
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout);
    assert.equal(out.code, 1, text);
    assert.ok(!CONTROL.test(text), JSON.stringify(text));
    assert.match(text, /10\.0\.0\.1\\x9b2J\\x1b\[2J/);
    // one line per issue: the newline in the name does not start a forged "k.toml:9" line
    assert.doesNotMatch(text, /^k\.toml:9: fine/m);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("text logs: a log value cannot repaint the terminal or forge a log line", async () => {
  const script = `
    import { logger, setupLogging, flushLogging } from "${ROOT}src/log/logging.ts";
    await setupLogging({ format: "text" });
    logger("x").warn("New leader elected: {holder}", { holder: ${JSON.stringify(FORGED_LOG)} });
    await flushLogging();
  `;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--ext=ts", script],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, text);
  assert.match(text, /New leader elected: .*\\x1b\]0;pwned.*\\u2028.*\\u202e/);
  assert.equal(text.trimEnd().split("\n").length, 1, text);
  assert.ok(!CONTROL.test(text) && !/[\u2028\u202e]/.test(text), JSON.stringify(text));
});
