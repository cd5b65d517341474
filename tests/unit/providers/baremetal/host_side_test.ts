import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { startHostSide } from "../../../../providers/baremetal/host_side.ts";
import type { RunningBird } from "../../../../providers/baremetal/bird/start_bird.ts";
import type { Config } from "../../../../src/config/types.ts";
import { bgpAnnouncedAddresses } from "../../../../src/status/host_report.ts";
import { fakeBird } from "./bird/_fake_bird.ts";
import { bgpConfig } from "./bird/_inventory.ts";
import { startRootStep } from "../../_fakes/root_step.ts";

/** BIRD's `show protocols all` for the session to tor-a: Established or not. */
function showProtocols(up: boolean): string {
  const state = up ? "Established" : "Active";
  return [
    "2002-Name       Proto      Table      State  Since         Info",
    `1002-keelson_peer_tor-a BGP        ---        ${up ? "up" : "start"}     ` +
    `2026-11-24 10:30:44.574  ${state}   `,
    `1006-  BGP state:          ${state}`,
    "       Channel ipv4",
    `         Routes:         0 imported, ${up ? 1 : 0} exported, 0 preferred`,
    "0000 ",
    "",
  ].join("\n");
}

Deno.test("the host side's data plane tells its listeners (the heartbeat) at once when what BIRD announces changes, not at the next renewal", async () => {
  const dir = await Deno.makeTempDir();
  const replies: Record<string, string> = {
    "configure": "0002-Reading configuration\n0003 Reconfigured\n",
    "show protocols all": showProtocols(true),
  };
  const bird = fakeBird(dir, replies);
  const file = `${dir}/bird.conf`;
  // BIRD started with one Service VIP of the BGP pool (kept until the caches sync)
  await Deno.writeTextFile(
    file,
    "protocol static keelson_vips4_p1 {\n  ipv4;\n  route 198.51.100.7/32 blackhole;\n}\n",
  );
  const start = await bgpConfig((t) =>
    t.replace(
      '[keepalived]\ninterface = "eth0"\n',
      // the agent's files (track file, staging) in the test's directory, not /run/keelson
      `[keepalived]\nenabled = false\ntrack_file_dir = "${dir}"\n`,
    )
      .replace(
        "[bgp]\n",
        `[bgp]\nconfig_file = "${file}"\nsocket = "${bird.path}"\n` +
          'check_command = ["true"]\nstatus_interval_ms = 60000\n',
      )
  );
  let config: Config = start;
  const stop = new AbortController();
  await using _root = await startRootStep(() => config, "cp-1");
  const side = await startHostSide({
    config: () => config,
    host: "cp-1",
    registry: new Registry(),
    signal: stop.signal,
  });
  try {
    const bird = side.announcers.find((a) => a.name === "bird") as RunningBird | undefined;
    assert.ok(bird && side.dataPlane, "BIRD runs here");
    await bird.sessions.poll();
    const announced = () => bgpAnnouncedAddresses(side.dataPlane!.snapshot().sessions ?? []).sort();
    assert.deepEqual(announced(), ["198.51.100.7"]);
    let heard = 0;
    side.dataPlane.subscribe(() => heard++);

    // nothing changes: nobody is woken
    await side.sync("periodic");
    await bird.sessions.poll();
    assert.equal(heard, 0);

    // the machine goes to maintenance: BIRD accepts a file announcing no VIP, and the listener
    // has heard of it by the time the render returns
    config = {
      ...start,
      machines: start.machines.map((m) => m.name === "cp-1" ? { ...m, state: "maintenance" } : m),
    };
    await side.sync("configuration reloaded");
    assert.equal(heard, 1);
    assert.deepEqual(announced(), []);
    const birdApply = () => side.dataPlane!.applies().find((a) => a.announcer === "bird")?.result;
    assert.equal(birdApply(), "success", "BIRD's own apply outcome reaches the report");

    // back: announced again, heard again
    config = start;
    await side.sync("configuration reloaded");
    assert.equal(heard, 2);
    assert.deepEqual(announced(), ["198.51.100.7"]);

    // the session drops at a poll: no address is announced over it any more
    replies["show protocols all"] = showProtocols(false);
    await bird.sessions.poll();
    assert.equal(heard, 3);
    assert.deepEqual(announced(), []);

    // a file BIRD refuses changes nothing it announces: nobody is woken
    replies["show protocols all"] = showProtocols(true);
    await bird.sessions.poll();
    assert.equal(heard, 4);
    replies["configure"] = "8002 Configuration error\n";
    config = {
      ...start,
      machines: start.machines.map((m) => m.name === "cp-1" ? { ...m, state: "maintenance" } : m),
    };
    await side.sync("configuration reloaded");
    assert.equal(heard, 4, "BIRD did not take it: the report still says what BIRD has");
    assert.deepEqual(announced(), ["198.51.100.7"]);
    assert.equal(birdApply(), "error", "and the heartbeat says BIRD did not take the file");
  } finally {
    replies["configure"] = "0002-Reading configuration\n0003 Reconfigured\n";
    stop.abort();
    await side.finished;
    await bird.close();
    await Deno.remove(dir, { recursive: true });
  }
});
