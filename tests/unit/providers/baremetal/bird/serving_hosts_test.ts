/**
 * BGP pools follow their serving hosts (`[pools.served_by]`): only those hosts announce the
 * pool, each over its own sessions; a worker serving a pool announces neither the control-plane
 * VIP nor pod CIDRs; `check` accepts a peer's `hosts` naming such a worker.
 */
import assert from "node:assert/strict";
import {
  announcedVips,
  type BirdModel,
  buildBirdModel,
} from "../../../../../providers/baremetal/bird/model.ts";
import { ConfigError } from "../../../../../src/config/config_error.ts";
import { runsBird } from "../../../../../src/config/restart_settings.ts";
import { bgpConfig } from "./_inventory.ts";

/** The base inventory with a pool `edge` served by the workers w-1 and w-b. */
const withEdge = (extraPeer = "") =>
  bgpConfig((t) =>
    t.replace(
      "[[machines]]",
      `[[pools]]
name = "edge"
addresses = ["203.0.113.0/28"]
announce = "bgp"
served_by = { roles = ["worker"], machines = ["w-1", "w-b"] }

${extraPeer}
[[machines]]`,
    ).replace(`pools = ["bgp-public"]\n`, "")
  );

function build(config: Awaited<ReturnType<typeof bgpConfig>>, host: string): BirdModel {
  const model = buildBirdModel({
    config,
    host,
    serviceVips: ["198.51.100.2", "203.0.113.2"],
    controlPlaneHealthy: true,
    nodes: [{
      metadata: { name: "cp-1" },
      spec: { podCIDRs: ["10.244.1.0/24"] },
      status: { addresses: [{ type: "InternalIP", address: "10.0.0.11" }] },
    }],
  });
  if ("error" in model) throw new Error(model.error);
  return model;
}

Deno.test("only a pool's serving hosts announce it; a worker announces its pools only", async () => {
  const config = await withEdge();
  const w1 = build(config, "w-1");
  const cp1 = build(config, "cp-1");
  assert.deepEqual(announcedVips(w1), ["203.0.113.2"]);
  assert.deepEqual(announcedVips(cp1), ["198.51.100.2"]);
  // the control-plane VIP and pod CIDRs stay the control-plane hosts'
  assert.deepEqual(w1.statics.map((s) => s.kind), ["service"]);
  assert.ok(cp1.statics.some((s) => s.kind === "control-plane"));
  assert.ok(cp1.statics.some((s) => s.kind === "pod"));
  assert.ok(runsBird(config, "w-1"));
  assert.ok(!runsBird(config, "far"));
  assert.ok("error" in buildBirdModel({ config, host: "far", serviceVips: [] }));
});

Deno.test("a worker opens sessions to the peers that select it, from its own address", async () => {
  const config = await withEdge(`[[bgp.peers]]
name = "tor-w"
address = "10.0.0.2"
asn = 64512
hosts = ["w-1"]
`);
  const w1 = build(config, "w-1");
  assert.deepEqual(w1.peers.map((p) => p.label), ["tor-w"]);
  assert.equal(w1.peers[0]!.localAddress?.value, 0x0a000015n);
  assert.deepEqual(w1.peers[0]!.exports, ["keelson_vips4_p2"]);
  // the control-plane hosts do not peer with tor-w
  assert.ok(!build(config, "cp-1").peers.some((p) => p.label === "tor-w"));
});

Deno.test("check refuses a peer's hosts naming a machine that runs no BIRD", async () => {
  const peer = (host: string) =>
    `[[bgp.peers]]
name = "tor-w"
address = "10.0.0.2"
asn = 64512
hosts = ["${host}"]
`;
  await withEdge(peer("w-1")); // a worker serving a BGP pool: accepted
  await assert.rejects(
    () => withEdge(peer("far")),
    (error: unknown) =>
      error instanceof ConfigError && /"far" is not a control-plane machine/.test(error.message),
  );
});
