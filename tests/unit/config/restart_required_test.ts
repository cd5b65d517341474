import assert from "node:assert/strict";
import { type LogRecord, reset } from "@logtape/logtape";
import { captureLogs } from "../_fakes/captured_logs.ts";
import { Registry } from "prom-client";
import { parseConfig } from "../../../src/config/parse_config.ts";
import { RESTART_REQUIRED_METRIC, RestartRequired } from "../../../src/config/restart_required.ts";

const BASE = `
[bgp]
asn = 64513

[[bgp.peers]]
name = "tor-a"
address = "10.0.0.1"
asn = 64512
password_file = "/etc/keelson/bgp/tor-a"

[[machines]]
name = "cp-1"
role = "control-plane"
internal_ips = ["10.0.0.11"]

[[machines]]
name = "cp-2"
role = "control-plane"
internal_ips = ["10.0.0.12"]
`;
const NEW_SOCKET = BASE.replace("asn = 64513\n", 'asn = 64513\nsocket = "/run/bird2/bird.ctl"\n');

async function gauge(registry: Registry): Promise<number | undefined> {
  return (await registry.getSingleMetric(RESTART_REQUIRED_METRIC)?.get())?.values[0]?.value;
}

function text(record: LogRecord): string {
  return record.message.map((part) => String(part)).join("");
}

Deno.test("RestartRequired: a changed socket warns with both values, sets the gauge, pins the start value; editing back clears it", async () => {
  const records = await captureLogs();
  try {
    const registry = new Registry();
    const running = parseConfig(BASE, "keelson.toml");
    const restart = new RestartRequired({ running, host: "cp-1", registry });
    assert.equal(await gauge(registry), 0);
    assert.deepEqual(restart.pending(), []);

    const next = parseConfig(NEW_SOCKET, "keelson.toml");
    const inForce = restart.update(next);
    assert.equal(inForce.bgp?.socket, "/run/bird/bird.ctl", "the running value stays in force");
    assert.equal(await gauge(registry), 1);
    assert.deepEqual(restart.pending(), ["[bgp] socket"]);
    const warnings = records.filter((r) => r.level === "warning").map(text);
    assert.equal(warnings.length, 1);
    assert.match(
      warnings[0]!,
      /\[bgp\] socket \/run\/bird\/bird\.ctl -> \/run\/bird2\/bird\.ctl/,
    );
    assert.match(warnings[0]!, /restart keelson to apply/);
    assert.doesNotMatch(warnings[0]!, /tor-a|password/, "nothing about peers or their keys");

    // a reload that changes only reloadable settings keeps the restart pending
    restart.update(parseConfig(NEW_SOCKET.replace("asn = 64512", "asn = 64514"), "keelson.toml"));
    assert.equal(await gauge(registry), 1);

    const back = restart.update(parseConfig(BASE, "keelson.toml"));
    assert.equal(back.bgp?.socket, "/run/bird/bird.ctl");
    assert.equal(await gauge(registry), 0);
    assert.deepEqual(restart.pending(), []);
    assert.ok(records.some((r) => r.level === "info" && /match the running ones/.test(text(r))));
  } finally {
    await reset();
  }
});

Deno.test("RestartRequired: a host without BIRD needs no restart for [bgp] socket", () => {
  const registry = new Registry();
  const running = parseConfig(BASE, "keelson.toml");
  const restart = new RestartRequired({ running, host: "w-9", registry });
  restart.update(parseConfig(NEW_SOCKET, "keelson.toml"));
  assert.deepEqual(restart.pending(), []);
});
