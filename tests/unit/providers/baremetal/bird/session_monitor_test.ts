import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { SessionMonitor } from "../../../../../providers/baremetal/bird/session_monitor.ts";
import type { Config } from "../../../../../src/config/types.ts";
import { bgpConfig } from "./_inventory.ts";

Deno.test("SessionMonitor polls the socket BIRD started with, also after a reload moved [bgp] socket", async () => {
  let config: Config = await bgpConfig();
  const started = config.bgp!.socket;
  const polled: string[] = [];
  const monitor = new SessionMonitor({
    config: () => config,
    socket: started,
    registry: new Registry(),
    read: (socket) => {
      polled.push(socket);
      return Promise.resolve([]);
    },
  });
  await monitor.poll();
  config = await bgpConfig((t) => t.replace("[bgp]\n", '[bgp]\nsocket = "/run/bird2/bird.ctl"\n'));
  assert.equal(config.bgp?.socket, "/run/bird2/bird.ctl");
  await monitor.poll();
  assert.deepEqual(polled, [started, started]);
});

Deno.test("SessionMonitor drops the series of a peer a reload removed or renamed", async () => {
  let config: Config = await bgpConfig();
  const registry = new Registry();
  const up = (name: string, exported: number) => ({
    name,
    state: "up",
    info: "Established",
    established: true,
    exported,
  });
  let states = [up("keelson_peer_tor-a", 3), up("keelson_peer_rr-1", 1)];
  const monitor = new SessionMonitor({
    config: () => config,
    socket: config.bgp!.socket,
    registry,
    read: () => Promise.resolve(states),
  });
  const series = async () =>
    (await registry.getMetricsAsJSON()).flatMap((m) =>
      m.values.map((v) => `${m.name}{${v.labels.peer}} ${v.value}`)
    ).sort();
  await monitor.poll();
  assert.deepEqual(await series(), [
    "keelson_bgp_routes_exported{rr-1} 1",
    "keelson_bgp_routes_exported{tor-a} 3",
    "keelson_bgp_session_up{rr-1} 1",
    "keelson_bgp_session_up{tor-a} 1",
  ]);
  // tor-a removed: BIRD has only rr-1 left
  config = await bgpConfig((t) =>
    t.replace(/\[\[bgp\.peers\]\]\nname = "tor-a"\n[\s\S]*?\n(?=\[\[)/, "")
  );
  assert.deepEqual(config.bgp!.peers.map((p) => p.name), ["rr-1"]);
  states = [up("keelson_peer_rr-1", 1)];
  await monitor.poll();
  assert.deepEqual(await series(), [
    "keelson_bgp_routes_exported{rr-1} 1",
    "keelson_bgp_session_up{rr-1} 1",
  ]);
  // renamed: the old name's series go, the new name's come (BIRD has the renamed protocol)
  states = [up("keelson_peer_rr-2", 1)];
  config = await bgpConfig((t) =>
    t.replace(/\[\[bgp\.peers\]\]\nname = "tor-a"\n[\s\S]*?\n(?=\[\[)/, "")
      .replace('name = "rr-1"', 'name = "rr-2"')
  );
  await monitor.poll();
  assert.deepEqual(await series(), [
    "keelson_bgp_routes_exported{rr-2} 1",
    "keelson_bgp_session_up{rr-2} 1",
  ]);
});
