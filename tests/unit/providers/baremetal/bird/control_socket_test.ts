import assert from "node:assert/strict";
import {
  birdCommand,
  BirdSocketError,
  parseProtocols,
} from "../../../../../providers/baremetal/bird/control_socket.ts";
import { fakeBird } from "./_fake_bird.ts";

const SHOW = [
  "2002-Name       Proto      Table      State  Since         Info",
  "1002-device1    Device     ---        up     2026-11-24 10:30:44.574  ",
  "1002-keelson_peer_tor-a BGP        ---        up     2026-11-24 10:30:44.574  Established   ",
  "1006-  BGP state:          Established",
  "       Neighbor address: 10.0.0.1",
  "       Channel ipv4",
  "         Routes:         0 imported, 3 exported, 0 preferred",
  "       Channel ipv6",
  "         Routes:         0 imported, 1 exported, 0 preferred",
  "1002-keelson_peer_rr-1 BGP        ---        start  2026-11-24 10:30:44.574  Active        Socket: Connection refused",
  "1006-  BGP state:          Active",
  "0000 ",
  "",
].join("\n");

Deno.test("birdCommand() reads a multi-line reply and parseProtocols() finds Keelson's sessions", async () => {
  const dir = await Deno.makeTempDir();
  const bird = fakeBird(dir, {
    "show protocols all": SHOW,
    "configure": "0002-Reading configuration from /x.conf\n0003 Reconfigured\n",
  });
  try {
    const reply = await birdCommand(bird.path, "show protocols all");
    assert.equal(reply.code, 0);
    const protocols = parseProtocols(reply);
    assert.deepEqual(protocols.map((p) => [p.name, p.established, p.exported]), [
      ["keelson_peer_tor-a", true, 4],
      ["keelson_peer_rr-1", false, 0],
    ]);
    assert.match(protocols[1]!.info, /Active/);
    const configure = await birdCommand(bird.path, "configure");
    assert.equal(configure.code, 3);
    assert.deepEqual(bird.commands, ["show protocols all", "configure"]);
  } finally {
    await bird.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("birdCommand() names the socket when BIRD is not running and refuses multi-line commands", async () => {
  await assert.rejects(() => birdCommand("/nonexistent/bird.ctl", "show status"), BirdSocketError);
  await assert.rejects(() => birdCommand("/x", "configure\nshow"), BirdSocketError);
});

Deno.test("SessionMonitor exports keelson_bgp_session_up and routes per peer by inventory name", async () => {
  const { Registry } = await import("prom-client");
  const { SessionMonitor } = await import(
    "../../../../../providers/baremetal/bird/session_monitor.ts"
  );
  const { bgpConfig } = await import("./_inventory.ts");
  const config = await bgpConfig();
  const registry = new Registry();
  let fail = false;
  const monitor = new SessionMonitor({
    config: () => config,
    socket: config.bgp!.socket,
    registry,
    read: () => {
      if (fail) return Promise.reject(new Error("down"));
      return Promise.resolve([
        {
          name: "keelson_peer_tor-a",
          state: "up",
          info: "Established",
          established: true,
          exported: 5,
        },
      ]);
    },
  });
  await monitor.poll();
  assert.ok(monitor.established("tor-a"));
  assert.ok(!monitor.established("rr-1"));
  const text = await registry.metrics();
  assert.match(text, /keelson_bgp_session_up\{peer="tor-a"\} 1/);
  assert.match(text, /keelson_bgp_routes_exported\{peer="tor-a"\} 5/);
  assert.doesNotMatch(text, /peer="rr-1"/);
  fail = true;
  await monitor.poll();
  assert.ok(!monitor.reachable);
  assert.ok(!monitor.established("tor-a"));
  assert.doesNotMatch(await registry.metrics(), /keelson_bgp_session_up\{peer="tor-a"\} 1/);
});
