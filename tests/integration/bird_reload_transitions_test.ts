/**
 * What a reload leaves in this host's BIRD file, transition by transition: each test renders with
 * one configuration, swaps in the reloaded one and renders again, as `reconfigure` does.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { V1Node, V1Service } from "@kubernetes/client-node";
import { BirdAnnouncer } from "../../providers/baremetal/bird/announcer.ts";
import type { BirdApplyResult } from "../../providers/baremetal/bird/config_applier.ts";
import { serviceVipsInBirdFile } from "../../providers/baremetal/bird/host_config.ts";
import { bgpPeerReports } from "../../providers/baremetal/bird/bgp_report.ts";
import { BirdRoutes } from "../../providers/baremetal/bird/routes.ts";
import { strandedAddressIssues } from "../../providers/baremetal/stranded_addresses.ts";
import { servedAddressChecker } from "../../providers/baremetal/keepalived/served_addresses.ts";
import { FakeInformer } from "../unit/_fakes/fake_cluster.ts";
import { bgpConfig } from "../unit/providers/baremetal/bird/_inventory.ts";
import { birdParse } from "../_support/tools.ts";

function service(name: string, ip: string): V1Service {
  return {
    metadata: { name, namespace: "default", uid: `uid-${name}` },
    spec: { type: "LoadBalancer", externalTrafficPolicy: "Cluster" },
    status: { loadBalancer: { ingress: [{ ip }] } },
  };
}

const POD_NODE: V1Node = {
  metadata: { name: "w-1" },
  spec: { podCIDRs: ["10.244.1.0/24"] },
  status: { addresses: [{ type: "InternalIP", address: "10.0.0.21" }] },
};

const POD_ROUTE = /route 10\.244\.1\.0\/24 blackhole \{ bgp_next_hop = 10\.0\.0\.21; \};/;
const CP_ROUTE = /route 10\.0\.0\.10\/32 blackhole;/;

/** An announcer on cp-1 whose configuration the test swaps, with a Service and a pod route. */
async function reloadable(ips: string[] = ["198.51.100.1"]) {
  const state = { config: await bgpConfig() };
  const texts: string[] = [];
  const services = new FakeInformer<V1Service>();
  const nodes = new FakeInformer<V1Node>();
  const announcer = new BirdAnnouncer({
    config: () => state.config,
    configFile: state.config.bgp!.config_file,
    host: "cp-1",
    applier: {
      apply(text: string): Promise<BirdApplyResult> {
        texts.push(text);
        return Promise.resolve({ result: "success", configured: true, message: "captured" });
      },
    },
    readPasswords: () => Promise.resolve(new Map()),
    controlPlaneHealthy: () => true,
  });
  ips.forEach((ip, i) => services.upsert(service(`svc-${i}`, ip)));
  nodes.upsert(POD_NODE);
  await announcer.setClusterSource({ services, nodes, hasSynced: () => true });
  const reload = async (edit: (text: string) => string) => {
    state.config = await bgpConfig(edit);
    await announcer.sync("configuration reloaded");
    const text = texts.at(-1)!;
    const parsed = await birdParse(text);
    assert.equal(parsed.code, 0, parsed.output);
    return text;
  };
  return { state, texts, announcer, reload, last: () => texts.at(-1)! };
}

Deno.test("reload: a pool switched from BGP to VRRP leaves BIRD at once, and keepalived's check takes it; back again it returns", async () => {
  const { state, reload, last } = await reloadable();
  assert.deepEqual(serviceVipsInBirdFile(last()), ["198.51.100.1"]);
  assert.equal(servedAddressChecker(state.config)("198.51.100.1").ok, false, "BIRD's, not VRRP's");

  // VRRP with IPv6 VIPs needs every host's IPv6 for unicast; a peer may not list a VRRP pool
  const toVrrp = (t: string) =>
    t.replace('announce = "bgp"\n\n[[machines]]', 'announce = "vrrp"\n\n[[machines]]')
      .replace('interface = "eth0"', 'interface = "eth0"\nunicast = false')
      .replace('pools = ["bgp-public"]\n', "");
  const vrrp = await reload(toVrrp);
  assert.equal(state.config.pools[1]!.announce, "vrrp");
  assert.deepEqual(serviceVipsInBirdFile(vrrp), []);
  assert.doesNotMatch(vrrp, /keelson_vips/);
  assert.equal(servedAddressChecker(state.config)("198.51.100.1").ok, true, "keepalived serves it");
  // the rest of the file is untouched: the control-plane VIP, pod routes, the sessions
  assert.match(vrrp, CP_ROUTE);
  assert.match(vrrp, POD_ROUTE);
  assert.match(vrrp, /protocol bgp 'keelson_peer_tor-a' \{/);

  const back = await reload((t) => t);
  assert.deepEqual(serviceVipsInBirdFile(back), ["198.51.100.1"]);
  assert.equal(servedAddressChecker(state.config)("198.51.100.1").ok, false);
});

Deno.test("reload: an address a BGP pool no longer holds (shrunk, reserved, pool gone) is withdrawn; the others stay", async () => {
  // a reload doing this while the cache has synced is refused (stranded_addresses.ts); a restart
  // with the edited file, or a cache not yet synced at the reload, gets here
  const { reload, last } = await reloadable(["198.51.100.1", "198.51.100.9"]);
  assert.deepEqual(serviceVipsInBirdFile(last()), ["198.51.100.1", "198.51.100.9"]);
  const shrunk = await reload((t) => t.replace('"198.51.100.0/28"', '"198.51.100.0/29"'));
  assert.deepEqual(serviceVipsInBirdFile(shrunk), ["198.51.100.1"]);
  const reserved = await reload((t) =>
    t.replace(
      'announce = "bgp"\n\n[[machines]]',
      'announce = "bgp"\nreserved = ["198.51.100.1"]\n\n[[machines]]',
    )
  );
  assert.deepEqual(serviceVipsInBirdFile(reserved), ["198.51.100.9"]);
  const gone = await reload((t) =>
    t.replace('pools = ["bgp-public"]\n', "")
      .replace(/\[\[pools\]\]\nname = "bgp-public"\n[\s\S]*?\n(?=\[\[)/, "")
  );
  assert.deepEqual(serviceVipsInBirdFile(gone), []);
  assert.doesNotMatch(gone, /keelson_vips/);
  assert.match(gone, POD_ROUTE, "pod routes do not depend on the pools");
});

Deno.test("reload: a removed peer's session and its heartbeat entry go; the remaining peer keeps its routes", async () => {
  const { announcer, reload, last } = await reloadable();
  // cp-3 peers with both; cp-1 only with tor-a: remove tor-a and see cp-1 drop its session
  assert.match(last(), /protocol bgp 'keelson_peer_tor-a' \{/);
  const removed = await reload((t) =>
    t.replace(/\[\[bgp\.peers\]\]\nname = "tor-a"\n[\s\S]*?\n(?=\[\[)/, "")
  );
  assert.doesNotMatch(removed, /protocol bgp/, "cp-1 has no peer left");
  assert.doesNotMatch(removed, /keelson_pods/, "no pod_cidrs peer: no pod routes");
  assert.deepEqual(bgpPeerReports(announcer.configuredModel, { established: () => true }), []);
});

Deno.test("reload: a peer's address or ASN changed renders the new neighbor in the same protocol (BIRD restarts that session)", async () => {
  const { announcer, reload } = await reloadable();
  const moved = await reload((t) =>
    t.replace('address = "10.0.0.1"\nasn = 64512', 'address = "10.0.0.2"\nasn = 64515')
  );
  assert.match(
    moved,
    /protocol bgp 'keelson_peer_tor-a' \{\n(.*\n)*? {2}neighbor 10\.0\.0\.2 as 64515;/,
  );
  assert.doesNotMatch(moved, /10\.0\.0\.1 as/);
  assert.deepEqual(
    bgpPeerReports(announcer.configuredModel, { established: () => false }).map((p) => p.peer),
    ["tor-a"],
  );
});

Deno.test("reload: the control-plane VIP changed or removed is withdrawn at once", async () => {
  const { reload, last } = await reloadable();
  assert.match(last(), CP_ROUTE);
  const moved = await reload((t) => t.replace('vip = ["10.0.0.10"]', 'vip = ["10.0.0.9"]'));
  assert.doesNotMatch(moved, CP_ROUTE);
  assert.match(moved, /route 10\.0\.0\.9\/32 blackhole;/);
  const none = await reload((t) => t.replace('vip = ["10.0.0.10"]\n', ""));
  assert.doesNotMatch(none, /keelson_cp/);
  assert.deepEqual(serviceVipsInBirdFile(none), ["198.51.100.1"], "Service VIPs stay");
});

Deno.test("reload: a machine in maintenance or shutdown withdraws its VIPs and the control-plane VIP, keeps sessions and pod routes; active again brings them back", async () => {
  const { reload, last } = await reloadable();
  const full = last();
  for (const state of ["maintenance", "shutdown"]) {
    const text = await reload((t) =>
      t.replace('name = "cp-1"\nrole', `name = "cp-1"\nstate = "${state}"\nrole`)
    );
    assert.deepEqual(serviceVipsInBirdFile(text), [], state);
    assert.doesNotMatch(text, /keelson_cp/, state);
    assert.match(text, POD_ROUTE, state);
    assert.match(text, /protocol bgp 'keelson_peer_tor-a' \{/, state);
  }
  assert.equal(await reload((t) => t), full, "active again: the same file as before");
});

Deno.test("reload: a retired machine withdraws every route over its open sessions (no Cease); active again announces again", async () => {
  const { announcer, reload, last } = await reloadable();
  const full = last();
  const retired = await reload((t) =>
    t.replace('name = "cp-1"\nrole', 'name = "cp-1"\nstate = "retired"\nrole')
  );
  assert.doesNotMatch(retired, /protocol static/, `routes left:\n${retired}`);
  // the session stays with the same options and exports nothing: an explicit withdrawal
  assert.match(retired, /protocol bgp 'keelson_peer_tor-a' \{/);
  assert.match(retired, /filter 'keelson_peer_tor-a_export' \{\n {2}reject;\n\}/);
  const options = (text: string) =>
    text.slice(text.indexOf("protocol bgp 'keelson_peer_tor-a'")).split("\n}")[0];
  assert.equal(options(retired), options(full));
  assert.deepEqual(
    bgpPeerReports(announcer.configuredModel, { established: () => true }),
    [{ peer: "tor-a", established: true, routes: [] }],
  );
  assert.equal(await reload((t) => t), full, "active again: the same file as before");
});

Deno.test("reload: pod_cidrs turned off withdraws the pod routes, and the route controller judges no Node until the restart", async () => {
  const { state, announcer, reload } = await reloadable();
  const routes = new BirdRoutes({
    announcer,
    sessions: { established: () => true, poll: () => Promise.resolve() },
    waitMs: 300,
    config: () => state.config,
  });
  assert.equal((await routes.listRoutes("k")).length, 1);
  const off = await reload((t) => t.replace("pod_cidrs = true\n", ""));
  assert.doesNotMatch(off, /keelson_pods/);
  assert.deepEqual(serviceVipsInBirdFile(off), ["198.51.100.1"], "Service VIPs stay");
  await assert.rejects(() => routes.listRoutes("k"), /no \[\[bgp\.peers\]\] entry has pod_cidrs/);
  await assert.rejects(
    () =>
      routes.createRoute("k", "", {
        name: "",
        targetNode: "w-1",
        destinationCIDR: "10.244.1.0/24",
      }),
    /Node conditions are left as they are/,
  );
  // back on: judged again
  await reload((t) => t);
  assert.equal((await routes.listRoutes("k")).length, 1);
});

Deno.test("reload: an address a BGP pool keeps in its range but IPAM may no longer allocate (a CIDR's network address) is withdrawn, and refused while a Service holds it", async () => {
  // the same 16 addresses, first as a range (every one usable), then as a CIDR (.0 and .15 not)
  const asRange = (t: string) => t.replace('"198.51.100.0/28"', '"198.51.100.0-198.51.100.15"');
  const { state, reload, last } = await reloadable(["198.51.100.0", "198.51.100.1"]);
  const ranged = await reload(asRange);
  assert.deepEqual(serviceVipsInBirdFile(ranged), ["198.51.100.0", "198.51.100.1"]);
  const before = state.config;
  const cidr = await reload((t) => t);
  assert.deepEqual(serviceVipsInBirdFile(cidr), ["198.51.100.1"], "only what IPAM allocates");
  assert.equal(last(), cidr);
  const held = [service("svc-0", "198.51.100.0")];
  assert.match(
    strandedAddressIssues(before, state.config, held, "base.toml")[0]?.message ?? "none",
    /strand 1 address .*198\.51\.100\.0 \(service "default\/svc-0"\)/,
  );
});

Deno.test("reload: a peer added ahead of another, or removed from ahead of it, leaves that other peer's protocol byte for byte (BIRD resets a protocol whose neighbor changes)", async () => {
  const { reload, last } = await reloadable();
  const block = (text: string, name: string) => {
    const start = text.indexOf(`# peer "${name}"`);
    assert.notEqual(start, -1, `no peer ${name} in:\n${text}`);
    return text.slice(start, text.indexOf("\n}\n", text.indexOf("protocol bgp", start)));
  };
  const torA = block(last(), "tor-a");
  const ahead = await reload((t) =>
    t.replace(
      '[[bgp.peers]]\nname = "tor-a"',
      '[[bgp.peers]]\nname = "tor-z"\naddress = "10.0.0.2"\nasn = 64512\nzones = ["row-a"]\n\n' +
        '[[bgp.peers]]\nname = "tor-a"',
    )
  );
  assert.match(block(ahead, "tor-z"), /neighbor 10\.0\.0\.2 as 64512;/);
  assert.equal(block(ahead, "tor-a"), torA, "tor-a's session is not touched by the insertion");
  const removedAgain = await reload((t) => t);
  assert.equal(block(removedAgain, "tor-a"), torA);
  assert.doesNotMatch(removedAgain, /tor-z/);
});

Deno.test("reload: a peer renamed to the longest name the schema allows renders a file BIRD accepts (its protocol restarts: a new name)", async () => {
  const { reload } = await reloadable();
  const long = "tor.a-" + "b".repeat(25) + "9"; // 32 characters, with '.' and '-'
  assert.equal(long.length, 32);
  const text = await reload((t) => t.replace('name = "tor-a"', `name = "${long}"`));
  assert.match(text, new RegExp(`protocol bgp 'keelson_peer_${long.replace(".", "\\.")}' \\{`));
  assert.match(
    text,
    new RegExp(`export filter 'keelson_peer_${long.replace(".", "\\.")}_export';`),
  );
});
