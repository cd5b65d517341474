import assert from "node:assert/strict";
import { type LogRecord, reset } from "@logtape/logtape";
import { Registry } from "prom-client";
import { bgpPeerReports } from "../../../../../providers/baremetal/bird/bgp_report.ts";
import { startBird } from "../../../../../providers/baremetal/bird/start_bird.ts";
import type { Config } from "../../../../../src/config/types.ts";
import { fakeBird } from "./_fake_bird.ts";
import { captureLogs } from "../../../_fakes/captured_logs.ts";
import { bgpConfig } from "./_inventory.ts";
import { startRootStep } from "../../../_fakes/root_step.ts";

/** BIRD's `show protocols all` for one Established session exporting `exported` routes. */
function showProtocols(exported: number): string {
  return [
    "2002-Name       Proto      Table      State  Since         Info",
    "1002-keelson_peer_tor-a BGP        ---        up     2026-11-24 10:30:44.574  Established   ",
    "1006-  BGP state:          Established",
    "       Channel ipv4",
    `         Routes:         0 imported, ${exported} exported, 0 preferred`,
    "0000 ",
    "",
  ].join("\n");
}

/**
 * A fake BIRD with one Established session to tor-a, the file it started with (announcing one VIP,
 * kept until the caches sync) and an inventory pointing at both, the agent's files (track file,
 * staging) in the test's directory, not /run/keelson.
 * @param statusIntervalMs how often the session monitor polls BIRD
 */
async function birdWithOneVip(statusIntervalMs: number) {
  const dir = await Deno.makeTempDir();
  const replies: Record<string, string> = {
    "configure": "0002-Reading configuration\n0003 Reconfigured\n",
    "show protocols all": showProtocols(1),
  };
  const bird = fakeBird(dir, replies);
  const file = `${dir}/keelson.conf`;
  await Deno.writeTextFile(
    file,
    "protocol static keelson_vips4_p1 {\n  ipv4;\n  route 198.51.100.7/32 blackhole;\n}\n",
  );
  const config = await bgpConfig((t) =>
    t.replace('vip = ["10.0.0.10"]\nannounce = "bgp"\n', 'vip = ["10.0.0.10"]\n')
      .replace('interface = "eth0"\n', `interface = "eth0"\ntrack_file_dir = "${dir}"\n`)
      .replace(
        "[bgp]\n",
        `[bgp]\nconfig_file = "${file}"\nsocket = "${bird.path}"\n` +
          `check_command = ["true"]\nstatus_interval_ms = ${statusIntervalMs}\n`,
      )
  );
  return { dir, replies, bird, file, config };
}

Deno.test("startBird after a reload removing [bgp]: BIRD gets a file announcing nothing, the gauges and the report claim no route", async () => {
  const { dir, replies, bird, file, config: start } = await birdWithOneVip(200);
  let config: Config = start;
  const registry = new Registry();
  const stop = new AbortController();
  await using _root = await startRootStep(() => config, "cp-1");
  const running = await startBird({
    config: () => config,
    host: "cp-1",
    registry,
    signal: stop.signal,
  });
  assert.ok(running);
  try {
    await running.sessions.poll();
    let metrics = await registry.metrics();
    assert.match(metrics, /keelson_bgp_vip_announced\{vip="198\.51\.100\.7"\} 1/);
    assert.match(metrics, /keelson_bgp_session_up\{peer="tor-a"\} 1/);

    const { bgp: _gone, ...rest } = start;
    config = rest as Config;
    replies["show protocols all"] = showProtocols(0);
    const configures = bird.commands.filter((c) => c === "configure").length;
    await running.sync("configuration reloaded");
    assert.equal(bird.commands.filter((c) => c === "configure").length, configures + 1);
    const text = await Deno.readTextFile(file);
    assert.doesNotMatch(text, /protocol static/);
    assert.match(text, /protocol bgp 'keelson_peer_tor-a' \{/);
    await running.sessions.poll();
    metrics = await registry.metrics();
    assert.doesNotMatch(metrics, /keelson_bgp_vip_announced\{/, "no VIP claimed");
    // the session is really up and really exports nothing
    assert.match(metrics, /keelson_bgp_session_up\{peer="tor-a"\} 1/);
    assert.match(metrics, /keelson_bgp_routes_exported\{peer="tor-a"\} 0/);
    assert.deepEqual(bgpPeerReports(running.announcer.configuredModel, running.sessions), [
      { peer: "tor-a", established: true, routes: [] },
    ]);
    await assert.rejects(() => running.routes!.listRoutes("k"), /\[bgp\] was removed/);
  } finally {
    stop.abort();
    await running.finished;
    await bird.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("startBird without [bgp] at start starts nothing: a [bgp] added later has no BIRD side to reach", async () => {
  const { bgp: _none, ...rest } = await bgpConfig();
  const registry = new Registry();
  const running = await startBird({
    config: () => rest as Config,
    host: "cp-1",
    registry,
    signal: new AbortController().signal,
  });
  assert.equal(running, undefined);
  assert.doesNotMatch(await registry.metrics(), /keelson_bgp_/, "no BGP series at all");
});

function text(record: LogRecord): string {
  return record.message.map((part) => String(part)).join("");
}

Deno.test("startBird on stop says it withdrew the VIPs only when BIRD accepted the file announcing none", async () => {
  // how BIRD answers the stop's configure: accepted, refused, or not listening any more
  const cases: [
    string,
    (replies: Record<string, string>, close: () => Promise<void>) => unknown,
  ][] = [
    ["accepted", () => {}],
    ["refused", (replies) => replies["configure"] = "8002 Configuration error\n"],
    ["not running", (_replies, close) => close()],
  ];
  for (const [name, atStop] of cases) {
    const records = await captureLogs();
    const dir = await Deno.makeTempDir();
    const replies: Record<string, string> = {
      "configure": "0002-Reading configuration\n0003 Reconfigured\n",
      "show protocols all": showProtocols(1),
    };
    const bird = fakeBird(dir, replies);
    const file = `${dir}/keelson.conf`;
    await Deno.writeTextFile(
      file,
      "protocol static keelson_vips4_p1 {\n  ipv4;\n  route 198.51.100.7/32 blackhole;\n}\n",
    );
    const config = await bgpConfig((t) =>
      t.replace('interface = "eth0"\n', `interface = "eth0"\ntrack_file_dir = "${dir}"\n`).replace(
        "[bgp]\n",
        // the agent's files (track file, staging) in the test's directory, not /run/keelson
        `[bgp]\nconfig_file = "${file}"\nsocket = "${bird.path}"\n` +
          'check_command = ["true"]\nstatus_interval_ms = 200\n',
      )
    );
    const stop = new AbortController();
    const root = await startRootStep(() => config, "cp-1");
    const running = await startBird({
      config: () => config,
      host: "cp-1",
      registry: new Registry(),
      signal: stop.signal,
    });
    assert.ok(running);
    let closed = false;
    try {
      assert.match(await Deno.readTextFile(file), /198\.51\.100\.7/, name);
      await atStop(replies, async () => {
        closed = true;
        await bird.close();
      });
      stop.abort();
      await running.finished;
      assert.doesNotMatch(await Deno.readTextFile(file), /198\.51\.100\.7/, `${name}: written`);
      const said = records.filter((r) => /withdr/i.test(text(r)));
      assert.equal(said.length, 1, `${name}: ${said.map(text).join("\n")}`);
      if (name === "accepted") {
        assert.equal(said[0]!.level, "info");
        assert.match(text(said[0]!), /^Withdrew every VIP before stopping: BIRD accepted/);
      } else {
        assert.equal(said[0]!.level, "error", name);
        assert.match(text(said[0]!), /^Could not withdraw the VIPs before stopping/, name);
        assert.doesNotMatch(text(said[0]!), /Withdrew/, name);
      }
    } finally {
      stop.abort();
      await running.finished;
      await root.stop();
      if (!closed) await bird.close();
      await reset();
      await Deno.remove(dir, { recursive: true });
    }
  }
});

/** BIRD's `show protocols all` for the session to tor-a, not Established. */
const SESSION_ACTIVE = [
  "2002-Name       Proto      Table      State  Since         Info",
  "1002-keelson_peer_tor-a BGP        ---        start  2026-11-24 10:30:44.574  Active   ",
  "1006-  BGP state:          Active",
  "0000 ",
  "",
].join("\n");

Deno.test("startBird's data-plane share: an announcement per VIP static, holding once its session is Established, failed when down, unknown when BIRD does not answer; each change told", async () => {
  const { dir, replies, bird, config } = await birdWithOneVip(60_000);
  const stop = new AbortController();
  const root = await startRootStep(() => config, "cp-1");
  const running = await startBird({
    config: () => config,
    host: "cp-1",
    registry: new Registry(),
    signal: stop.signal,
  });
  assert.ok(running?.dataPlane);
  let told = 0;
  running.dataPlane.subscribe(() => told++);
  const states = () =>
    running.dataPlane!.snapshot().instances!.map((i) =>
      [i.announcer, i.name, i.role, i.serves, i.addresses.join(",")].join(" ")
    );
  let closed = false;
  try {
    await running.sessions.poll();
    assert.deepEqual(states(), ["bird keelson_vips4_p1 holding services 198.51.100.7"]);

    replies["show protocols all"] = SESSION_ACTIVE;
    const before = told;
    await running.sessions.poll();
    assert.deepEqual(states(), ["bird keelson_vips4_p1 failed services 198.51.100.7"]);
    assert.ok(told > before, "the session going down was told");

    // BIRD silent: the sessions report still says not Established, the announcement changes
    const sessionsBefore = JSON.stringify(running.dataPlane.snapshot().sessions);
    const silentBefore = told;
    closed = true;
    await bird.close();
    await running.sessions.poll();
    assert.equal(running.sessions.reachable, false);
    assert.equal(JSON.stringify(running.dataPlane.snapshot().sessions), sessionsBefore);
    assert.deepEqual(states(), ["bird keelson_vips4_p1 unknown services 198.51.100.7"]);
    assert.ok(told > silentBefore, "BIRD no longer answering was told");
  } finally {
    stop.abort();
    await running.finished;
    await root.stop();
    if (!closed) await bird.close();
    await Deno.remove(dir, { recursive: true });
  }
});
