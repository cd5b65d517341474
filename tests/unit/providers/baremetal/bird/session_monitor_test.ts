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
