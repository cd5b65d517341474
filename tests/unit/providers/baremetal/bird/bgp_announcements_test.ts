import assert from "node:assert/strict";
import {
  bgpAnnouncements,
  BgpAnnouncementTracker,
  type BgpSessionStates,
} from "../../../../../providers/baremetal/bird/bgp_announcements.ts";
import { type BirdModel, buildBirdModel } from "../../../../../providers/baremetal/bird/model.ts";
import { AnnouncementReportSchema } from "../../../../../src/status/host_report.ts";
import type { Config } from "../../../../../src/config/types.ts";
import { bgpConfig } from "./_inventory.ts";

const NODES = [{
  metadata: { name: "w-1" },
  spec: { podCIDRs: ["10.244.1.0/24"] },
  status: { addresses: [{ type: "InternalIP", address: "10.0.0.21" }] },
}];

/** cp-1's model: the control-plane VIP, two IPv4 VIPs and one IPv6 VIP, w-1's pod CIDR. */
function modelOf(
  config: Config,
  serviceVips = ["198.51.100.2", "2001:db8:100::1", "198.51.100.1"],
) {
  const model = buildBirdModel({
    config,
    host: "cp-1",
    serviceVips,
    nodes: NODES,
    controlPlaneHealthy: true,
  });
  if ("error" in model) throw new Error(model.error);
  return model;
}

function sessions(established: string[], reachable = true): BgpSessionStates {
  return { reachable, established: (peer) => established.includes(peer) };
}

const T0 = "2026-01-01T12:00:00.000Z";
const T1 = "2026-01-01T12:00:05.000Z";

Deno.test("bgpAnnouncements(): one announcement per VIP static protocol, holding over an Established peer; pod CIDRs are none", async () => {
  const model = modelOf(await bgpConfig());
  // the model holds a pod protocol too: it is no announcement
  assert.ok(model.statics.some((s) => s.kind === "pod"));
  const { instances } = bgpAnnouncements({
    model,
    sessions: sessions(["tor-a"]),
    announcer: "bird",
    previous: new Map(),
    now: T0,
  });
  const common = { announcer: "bird", role: "holding", observedFrom: "daemon", since: T0 };
  assert.deepEqual(instances, [
    { ...common, name: "keelson_cp4", addresses: ["10.0.0.10"], serves: "control-plane" },
    {
      ...common,
      name: "keelson_vips4_p1",
      addresses: ["198.51.100.1", "198.51.100.2"],
      serves: "services",
    },
    { ...common, name: "keelson_vips6_p1", addresses: ["2001:db8:100::1"], serves: "services" },
  ]);
  // what the heartbeat publishes of them passes the schema every reader applies
  for (const i of instances) {
    const parsed = AnnouncementReportSchema.safeParse({
      announcer: i.announcer,
      name: i.name,
      state: i.role,
      observed: i.observedFrom,
      since: i.since,
      vips: i.addresses,
      serves: i.serves,
    });
    assert.ok(parsed.success, JSON.stringify(parsed.error?.issues));
  }
  assert.deepEqual(
    bgpAnnouncements({
      model: undefined,
      sessions: sessions(["tor-a"]),
      announcer: "bird",
      previous: new Map(),
      now: T0,
    }).instances,
    [],
    "no model accepted yet: no announcement",
  );
});

Deno.test("bgpAnnouncements(): holding while any exporting peer is Established, failed when none is, unknown while BIRD does not answer", async () => {
  // rr-1 for every host: cp-1 exports everything to tor-a and rr-1
  const model = modelOf(await bgpConfig((t) => t.replace('hosts = ["cp-3"]\n', "")));
  assert.deepEqual(model.peers.map((p) => p.label), ["tor-a", "rr-1"]);
  const roles = (s: BgpSessionStates) =>
    bgpAnnouncements({ model, sessions: s, announcer: "bird", previous: new Map(), now: T0 })
      .instances.map((i) => [i.name, i.role]);
  const all = (role: string) => [
    ["keelson_cp4", role],
    ["keelson_vips4_p1", role],
    ["keelson_vips6_p1", role],
  ];
  assert.deepEqual(roles(sessions(["tor-a", "rr-1"])), all("holding"));
  assert.deepEqual(roles(sessions(["rr-1"])), all("holding"), "one Established peer suffices");
  assert.deepEqual(roles(sessions([])), all("failed"));
  // a silent control socket says nothing of the sessions (and established() is false then)
  assert.deepEqual(roles(sessions(["tor-a"], false)), all("unknown"));
});

Deno.test("bgpAnnouncements(): a static exported to no peer is failed, whatever the sessions", async () => {
  // tor-a, cp-1's only peer, does not take the control-plane VIP
  const model = modelOf(
    await bgpConfig((t) =>
      t.replace('name = "tor-a"\n', 'name = "tor-a"\ncontrol_plane = false\n')
    ),
  );
  assert.deepEqual(model.peers.map((p) => p.exports.includes("keelson_cp4")), [false]);
  for (const reachable of [true, false]) {
    const { instances } = bgpAnnouncements({
      model,
      sessions: sessions(["tor-a"], reachable),
      announcer: "bird",
      previous: new Map(),
      now: T0,
    });
    assert.deepEqual(instances.map((i) => [i.name, i.role]), [
      ["keelson_cp4", "failed"],
      ["keelson_vips4_p1", reachable ? "holding" : "unknown"],
      ["keelson_vips6_p1", reachable ? "holding" : "unknown"],
    ]);
  }
});

Deno.test("bgpAnnouncements(): a static with no route is no announcement", async () => {
  const model = modelOf(await bgpConfig());
  const emptied: BirdModel = {
    ...model,
    statics: model.statics.map((s) => s.name === "keelson_vips6_p1" ? { ...s, routes: [] } : s),
  };
  const { instances, history } = bgpAnnouncements({
    model: emptied,
    sessions: sessions(["tor-a"]),
    announcer: "bird",
    previous: new Map(),
    now: T0,
  });
  assert.deepEqual(instances.map((i) => i.name), ["keelson_cp4", "keelson_vips4_p1"]);
  assert.deepEqual([...history.keys()], ["keelson_cp4", "keelson_vips4_p1"]);
});

Deno.test("bgpAnnouncements(): since is kept while the state is, new VIPs included; a new state starts it again; gone protocols are forgotten", async () => {
  const config = await bgpConfig();
  const first = bgpAnnouncements({
    model: modelOf(config),
    sessions: sessions(["tor-a"]),
    announcer: "bird",
    previous: new Map(),
    now: T0,
  });
  // another VIP in the pool, the same state: the same since
  const more = bgpAnnouncements({
    model: modelOf(config, ["198.51.100.1", "198.51.100.2", "198.51.100.3", "2001:db8:100::1"]),
    sessions: sessions(["tor-a"]),
    announcer: "bird",
    previous: first.history,
    now: T1,
  });
  assert.deepEqual(more.instances.map((i) => [i.name, i.since, i.addresses.length]), [
    ["keelson_cp4", T0, 1],
    ["keelson_vips4_p1", T0, 3],
    ["keelson_vips6_p1", T0, 1],
  ]);
  // the session down: each took its new state at T1
  const down = bgpAnnouncements({
    model: modelOf(config, ["198.51.100.1"]),
    sessions: sessions([]),
    announcer: "bird",
    previous: more.history,
    now: T1,
  });
  assert.deepEqual(down.instances.map((i) => [i.name, i.role, i.since]), [
    ["keelson_cp4", "failed", T1],
    ["keelson_vips4_p1", "failed", T1],
  ]);
  // the IPv6 VIP's protocol is gone: its history too (it starts afresh if it comes back)
  assert.deepEqual([...down.history.keys()], ["keelson_cp4", "keelson_vips4_p1"]);
});

Deno.test("BgpAnnouncementTracker: since by its clock, at the first read of each new state", async () => {
  const model = modelOf(await bgpConfig());
  let now = Date.parse(T0);
  const tracker = new BgpAnnouncementTracker("bird", () => now);
  const at = (s: BgpSessionStates) =>
    tracker.read(model, s).map((i) => `${i.name}=${i.role}@${i.since}`);
  assert.deepEqual(at(sessions([], false)), [
    `keelson_cp4=unknown@${T0}`,
    `keelson_vips4_p1=unknown@${T0}`,
    `keelson_vips6_p1=unknown@${T0}`,
  ]);
  now = Date.parse(T1);
  const up = at(sessions(["tor-a"]));
  assert.deepEqual(up, [
    `keelson_cp4=holding@${T1}`,
    `keelson_vips4_p1=holding@${T1}`,
    `keelson_vips6_p1=holding@${T1}`,
  ]);
  now += 60_000;
  assert.deepEqual(at(sessions(["tor-a"])), up, "unchanged states keep their since");
  assert.deepEqual(tracker.read(undefined, sessions(["tor-a"])), []);
});
