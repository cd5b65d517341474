import assert from "node:assert/strict";
import type { V1Node, V1Service } from "@kubernetes/client-node";
import { BirdAnnouncer } from "../../../../../providers/baremetal/bird/announcer.ts";
import type { BirdApplyResult } from "../../../../../providers/baremetal/bird/config_applier.ts";
import { BirdRoutes } from "../../../../../providers/baremetal/bird/routes.ts";
import { serviceVipsInBirdFile } from "../../../../../providers/baremetal/bird/host_config.ts";
import { announcedVips } from "../../../../../providers/baremetal/bird/model.ts";
import { bgpPeerReports } from "../../../../../providers/baremetal/bird/bgp_report.ts";
import type { Config } from "../../../../../src/config/types.ts";
import { reset } from "@logtape/logtape";
import { FakeInformer } from "../../../_fakes/fake_cluster.ts";
import { captureLogs } from "../../../_fakes/captured_logs.ts";
import { bgpConfig, offGrammar } from "./_inventory.ts";
import { assertGolden } from "../../../../_support/golden.ts";
import { pollUntil, turns } from "../../../../_support/poll.ts";

function service(name: string, ip: string, policy = "Cluster"): V1Service {
  return {
    metadata: { name, namespace: "default", uid: `uid-${name}` },
    spec: { type: "LoadBalancer", externalTrafficPolicy: policy },
    status: { loadBalancer: { ingress: [{ ip }] } },
  };
}

class CapturingApplier {
  texts: string[] = [];
  configured = true;
  apply(text: string): Promise<BirdApplyResult> {
    this.texts.push(text);
    return Promise.resolve({ result: "success", configured: this.configured, message: "captured" });
  }
  get last(): string {
    return this.texts.at(-1) ?? "";
  }
}

async function setup(
  options: { healthy?: () => boolean; cp?: () => boolean; configFile?: string } = {},
) {
  const config = await bgpConfig();
  let current = config;
  const applier = new CapturingApplier();
  const services = new FakeInformer<V1Service>();
  const nodes = new FakeInformer<V1Node>();
  const announced: string[] = [];
  const endpoints = new Map<string, string[]>();
  const announcer = new BirdAnnouncer({
    config: () => current,
    configFile: options.configFile ?? config.bgp!.config_file,
    host: "cp-1",
    applier,
    readPasswords: () => Promise.resolve(new Map()),
    ...(options.healthy ? { healthy: options.healthy } : {}),
    ...(options.cp ? { controlPlaneHealthy: options.cp } : {}),
    onAnnounced: (s, vips) => announced.push(`${s.metadata?.name} ${vips.join(",")}`),
  });
  const source = {
    services,
    nodes,
    hasSynced: () => true,
    endpointNodeNames: (s: V1Service) => endpoints.get(s.metadata?.name ?? ""),
  };
  /** What a reload hands the announcer from now on. */
  const reload = (next: Config) => {
    current = next;
  };
  return { config, applier, services, nodes, announcer, source, announced, endpoints, reload };
}

Deno.test("the announcer announces BGP-pool VIPs of Cluster Services and reports them once", async () => {
  const { applier, services, announcer, source, announced } = await setup();
  services.upsert(service("web", "198.51.100.1"));
  services.upsert(service("vrrp", "192.0.2.1"));
  await announcer.setClusterSource(source);
  assert.deepEqual(serviceVipsInBirdFile(applier.last), ["198.51.100.1"]);
  assert.deepEqual(announced, ["web 198.51.100.1"]);
  await announcer.sync("again");
  assert.deepEqual(announced, ["web 198.51.100.1"]);
});

Deno.test("Local Services are announced only while this host has a ready endpoint", async () => {
  const { applier, services, announcer, source, endpoints } = await setup();
  services.upsert(service("local", "198.51.100.2", "Local"));
  endpoints.set("local", ["w-1"]);
  await announcer.setClusterSource(source);
  assert.deepEqual(serviceVipsInBirdFile(applier.last), []);
  endpoints.set("local", ["cp-1", "w-1"]);
  await announcer.sync("endpoints");
  assert.deepEqual(serviceVipsInBirdFile(applier.last), ["198.51.100.2"]);
});

Deno.test("a NotReady Node withdraws the Service VIPs and keeps the control-plane VIP; a drain withdraws both", async () => {
  let healthy = true;
  const { applier, services, announcer, source } = await setup({
    healthy: () => healthy,
    cp: () => true,
  });
  services.upsert(service("web", "198.51.100.1"));
  await announcer.setClusterSource(source);
  assert.match(applier.last, /route 10\.0\.0\.10\/32 blackhole;/);
  healthy = false;
  await announcer.sync("unhealthy");
  assert.deepEqual(serviceVipsInBirdFile(applier.last), []);
  // the control-plane VIP is the apiserver's: a kubelet's readiness does not take it away
  assert.match(applier.last, /route 10\.0\.0\.10\/32 blackhole;/);
  assert.match(applier.last, /protocol bgp 'keelson_peer_tor-a'/, "sessions stay");
  healthy = true;
  await announcer.sync("healthy");
  assert.deepEqual(serviceVipsInBirdFile(applier.last), ["198.51.100.1"]);
  await announcer.drain();
  assert.deepEqual(serviceVipsInBirdFile(applier.last), []);
  assert.doesNotMatch(applier.last, /10\.0\.0\.10\/32/);
  await announcer.sync("after drain");
  assert.deepEqual(serviceVipsInBirdFile(applier.last), [], "a drained host stays withdrawn");
});

Deno.test("before the caches sync the announcer keeps the VIPs of the file on disk", async () => {
  const dir = await Deno.makeTempDir();
  const { applier, announcer } = await setup({ configFile: `${dir}/keelson.conf` });
  try {
    await Deno.writeTextFile(
      `${dir}/keelson.conf`,
      "protocol static keelson_vips4_p1 {\n  ipv4;\n  route 198.51.100.7/32 blackhole;\n}\n",
    );
    await announcer.sync("startup");
    assert.deepEqual(serviceVipsInBirdFile(applier.last), ["198.51.100.7"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("BirdRoutes lists a pod route once BIRD accepted it and a receiving session is up", async () => {
  const { config, nodes, announcer, source } = await setup();
  nodes.upsert({
    metadata: { name: "w-1" },
    spec: { podCIDRs: ["10.244.1.0/24"] },
    status: { addresses: [{ type: "InternalIP", address: "10.0.0.21" }] },
  });
  nodes.upsert({
    metadata: { name: "far" },
    spec: { podCIDRs: ["10.244.2.0/24"] },
    status: { addresses: [{ type: "InternalIP", address: "10.0.7.21" }] },
  });
  await announcer.setClusterSource(source);
  let up = false;
  const routes = new BirdRoutes({
    announcer,
    sessions: { established: (peer) => up && peer === "tor-a", poll: () => Promise.resolve() },
    waitMs: 300,
    config: () => config,
  });
  assert.deepEqual(await routes.listRoutes("k"), []);
  await assert.rejects(
    () =>
      routes.createRoute("k", "", {
        name: "",
        targetNode: "w-1",
        destinationCIDR: "10.244.1.0/24",
      }),
    /no Established session to "tor-a"/,
  );
  up = true;
  assert.deepEqual((await routes.listRoutes("k")).map((r) => [r.targetNode, r.destinationCIDR]), [
    ["w-1", "10.244.1.0/24"],
  ]);
  await routes.createRoute("k", "", {
    name: "",
    targetNode: "w-1",
    destinationCIDR: "10.244.1.0/24",
  });
  await assert.rejects(
    () =>
      routes.createRoute("k", "", {
        name: "",
        targetNode: "far",
        destinationCIDR: "10.244.2.0/24",
      }),
    /no \[\[bgp\.peers\]\] entry with pod_cidrs/,
  );
});

Deno.test("a rotated password applies at the next sync; a broken file keeps the last good key", async () => {
  const config = await bgpConfig((t) =>
    t.replace("bfd = true\n", 'bfd = true\npassword_file = "/k/tor-a"\n')
  );
  const applier = new CapturingApplier();
  let files = new Map([["/k/tor-a", "first-key"]]);
  const announcer = new BirdAnnouncer({
    config: () => config,
    configFile: config.bgp!.config_file,
    host: "cp-1",
    applier,
    readPasswords: () => Promise.resolve(files),
  });
  await announcer.sync("start");
  assert.match(applier.last, /password "first-key";/);
  files = new Map([["/k/tor-a", "second-key"]]);
  await announcer.sync("rotated");
  assert.match(applier.last, /password "second-key";/);
  files = new Map(); // unreadable or invalid now
  await announcer.sync("broken");
  assert.match(applier.last, /password "second-key";/);
});

Deno.test("before the caches sync, the announcer keeps the VIPs of the file BIRD started with, not of a reloaded [bgp] config_file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const vipFile = (vip: string) =>
      `protocol static keelson_vips4_p1 {\n  ipv4;\n  route ${vip}/32 blackhole;\n}\n`;
    const started = `${dir}/started.conf`, reloaded = `${dir}/reloaded.conf`;
    await Deno.writeTextFile(started, vipFile("198.51.100.7"));
    await Deno.writeTextFile(reloaded, vipFile("198.51.100.9"));
    // a reload moved [bgp] config_file; BIRD still runs `-c started.conf`
    const config = await bgpConfig((t) =>
      t.replace("[bgp]\n", `[bgp]\nconfig_file = "${reloaded}"\n`)
    );
    assert.equal(config.bgp?.config_file, reloaded);
    const applier = new CapturingApplier();
    const announcer = new BirdAnnouncer({
      config: () => config,
      configFile: started,
      host: "cp-1",
      applier,
      readPasswords: () => Promise.resolve(new Map()),
    });
    await announcer.sync("reloaded");
    assert.deepEqual(serviceVipsInBirdFile(applier.last), ["198.51.100.7"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a drain during a slower sync is applied last: the host ends withdrawn", async () => {
  const config = await bgpConfig();
  const applier = new CapturingApplier();
  const services = new FakeInformer<V1Service>();
  services.upsert(service("web", "198.51.100.1"));
  // the first render's password read is slow, the drain's is not: the drain's text must still be
  // the last one applied (a render reads the draining flag after its reads)
  const reads: ((files: Map<string, string>) => void)[] = [];
  const announcer = new BirdAnnouncer({
    config: () => config,
    configFile: config.bgp!.config_file,
    host: "cp-1",
    applier,
    readPasswords: () =>
      reads.length === 0
        ? new Promise((resolve) => reads.push(resolve))
        : (reads.push(() => {}), Promise.resolve(new Map())),
  });
  const source = {
    services,
    nodes: new FakeInformer<V1Node>(),
    hasSynced: () => true,
    endpointNodeNames: () => undefined,
  };
  const first = announcer.setClusterSource(source);
  await pollUntil("the first render's read", () => reads.length >= 1);
  const drained = announcer.drain();
  await turns(); // the drain queues behind the first render, which still waits for its read
  reads[0]!(new Map());
  await Promise.all([first, drained]);
  assert.deepEqual(serviceVipsInBirdFile(applier.last), [], `last applied: ${applier.last}`);
});

Deno.test("a reload retiring the host during a slower sync is applied last: no VIP comes back", async () => {
  const active = await bgpConfig();
  const retired: Config = {
    ...active,
    machines: active.machines.map((m) =>
      m.name === "cp-1" ? { ...m, state: "retired" as const } : m
    ),
  };
  let config = active;
  const applier = new CapturingApplier();
  const services = new FakeInformer<V1Service>();
  services.upsert(service("web", "198.51.100.1"));
  // the periodic render's password read is slow; the reload's render starts meanwhile
  const reads: ((files: Map<string, string>) => void)[] = [];
  const announcer = new BirdAnnouncer({
    config: () => config,
    configFile: active.bgp!.config_file,
    host: "cp-1",
    applier,
    readPasswords: () =>
      reads.length === 0
        ? new Promise((resolve) => reads.push(resolve))
        : (reads.push(() => {}), Promise.resolve(new Map())),
  });
  const first = announcer.setClusterSource({
    services,
    nodes: new FakeInformer<V1Node>(),
    hasSynced: () => true,
    endpointNodeNames: () => undefined,
  });
  await pollUntil("the first render's read", () => reads.length >= 1);
  config = retired;
  const reloaded = announcer.sync("config reloaded");
  await turns(); // the reload's render queues behind the first, which still waits for its read
  reads[0]!(new Map());
  await Promise.all([first, reloaded]);
  assert.deepEqual(serviceVipsInBirdFile(applier.last), [], `last applied: ${applier.last}`);
  assert.equal(applier.texts.length, 2, "one render each, in call order");
});

/** The inventory as a reload without `[bgp]` leaves it (the table gone, the rest unchanged). */
function withoutBgp(config: Config): Config {
  const { bgp: _gone, ...rest } = config;
  return rest as Config;
}

const POD_NODE: V1Node = {
  metadata: { name: "w-1" },
  spec: { podCIDRs: ["10.244.1.0/24"] },
  status: { addresses: [{ type: "InternalIP", address: "10.0.0.21" }] },
};

Deno.test("a reload removing [bgp] withdraws every route (VIPs, control-plane VIP, pod routes) and keeps the peers", async () => {
  const { config: start, applier, services, nodes, announcer, reload } = await setup({
    cp: () => true,
  });
  services.upsert(service("web", "198.51.100.1"));
  nodes.upsert(POD_NODE);
  await announcer.setClusterSource({ services, nodes, hasSynced: () => true });
  const full = applier.last;
  assert.deepEqual(serviceVipsInBirdFile(full), ["198.51.100.1"]);
  assert.match(full, /route 10\.0\.0\.10\/32 blackhole;/);
  assert.match(full, /route 10\.244\.1\.0\/24 blackhole \{ bgp_next_hop = 10\.0\.0\.21; \};/);
  assert.equal(announcer.bgpRemoved, false);

  reload(withoutBgp(start));
  await announcer.sync("configuration reloaded");
  const empty = applier.last;
  assert.equal(announcer.bgpRemoved, true);
  assert.doesNotMatch(empty, /protocol static/, `routes left:\n${empty}`);
  assert.doesNotMatch(empty, /^ *route /m);
  // the session stays, with the same protocol options (no reset), and exports nothing
  assert.match(empty, /protocol bgp 'keelson_peer_tor-a' \{/);
  assert.match(empty, /filter 'keelson_peer_tor-a_export' \{\n {2}reject;\n\}/);
  const options = (text: string) =>
    text.slice(text.indexOf("protocol bgp 'keelson_peer_tor-a'")).split("\n}")[0];
  assert.equal(options(empty), options(full), "the session's options are unchanged");
  assert.deepEqual(offGrammar(empty), []);
  // BIRD must accept the withdrawn file: tests/integration/bird_accepts_test.ts parses it
  await assertGolden(new URL("testdata/bgp_removed.conf", import.meta.url), empty);
  assert.deepEqual(announcedVips(announcer.configuredModel!), []);
  assert.deepEqual(
    bgpPeerReports(announcer.configuredModel, { established: () => true }),
    [{ peer: "tor-a", established: true, routes: [] }],
    "the heartbeat claims no route",
  );
  assert.equal(announcer.birdConfig(), start, "rendered from the last config with [bgp]");
  const count = applier.texts.length;
  await announcer.sync("periodic");
  assert.equal(applier.texts.length, count + 1);
  assert.equal(applier.last, empty, "later renders stay withdrawn");
  await announcer.drain();
  assert.equal(applier.last, empty, "a drain renders the same");
});

Deno.test("[bgp] back after a removal: VIPs, the control-plane VIP and pod routes return", async () => {
  const { config: start, applier, services, nodes, announcer, announced, reload } = await setup({
    cp: () => true,
  });
  services.upsert(service("web", "198.51.100.1"));
  nodes.upsert(POD_NODE);
  await announcer.setClusterSource({ services, nodes, hasSynced: () => true });
  const full = applier.last;
  reload(withoutBgp(start));
  await announcer.sync("reload without [bgp]");
  assert.deepEqual(serviceVipsInBirdFile(applier.last), []);
  reload(await bgpConfig()); // a new object with the same values, as a reload parses it
  await announcer.sync("reload with [bgp]");
  assert.equal(announcer.bgpRemoved, false);
  assert.equal(applier.last, full);
  assert.deepEqual(announced, ["web 198.51.100.1", "web 198.51.100.1"], "announced again");
});

Deno.test("a machine no longer control-plane at a reload withdraws like a removed [bgp]", async () => {
  const { config: start, applier, services, announcer, reload } = await setup();
  services.upsert(service("web", "198.51.100.1"));
  await announcer.setClusterSource({
    services,
    nodes: new FakeInformer<V1Node>(),
    hasSynced: () => true,
  });
  assert.deepEqual(serviceVipsInBirdFile(applier.last), ["198.51.100.1"]);
  reload({
    ...start,
    machines: start.machines.map((m) => m.name === "cp-1" ? { ...m, role: "worker" } : m),
  } as Config);
  await announcer.sync("reload");
  assert.equal(announcer.bgpRemoved, true);
  assert.doesNotMatch(applier.last, /protocol static/);
  assert.match(applier.last, /protocol bgp 'keelson_peer_tor-a' \{/);
});

Deno.test("a withdrawal BIRD did not take is retried, and the old routes are still claimed meanwhile", async () => {
  const { config: start, applier, services, announcer, reload } = await setup();
  services.upsert(service("web", "198.51.100.1"));
  await announcer.setClusterSource({
    services,
    nodes: new FakeInformer<V1Node>(),
    hasSynced: () => true,
  });
  reload(withoutBgp(start));
  applier.configured = false; // BIRD is down or refused configure
  await announcer.sync("reload");
  assert.deepEqual(serviceVipsInBirdFile(applier.last), []);
  assert.deepEqual(
    announcedVips(announcer.configuredModel!),
    ["198.51.100.1"],
    "BIRD still has the last file it accepted",
  );
  applier.configured = true;
  await announcer.sync("periodic");
  assert.deepEqual(announcedVips(announcer.configuredModel!), []);
});

Deno.test("before the caches sync, VIPs withdrawn by a removed [bgp] come back with it", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/keelson.conf`;
    await Deno.writeTextFile(
      file,
      "protocol static keelson_vips4_p1 {\n  ipv4;\n  route 198.51.100.7/32 blackhole;\n}\n",
    );
    const start = await bgpConfig();
    let config = start;
    const applier = new CapturingApplier();
    const announcer = new BirdAnnouncer({
      config: () => config,
      configFile: file,
      host: "cp-1",
      // writes as the real applier does, so the next render reads the withdrawn file
      applier: {
        apply: async (text) => {
          await Deno.writeTextFile(file, text);
          return await applier.apply(text);
        },
      },
      readPasswords: () => Promise.resolve(new Map()),
    });
    await announcer.sync("startup");
    assert.deepEqual(serviceVipsInBirdFile(applier.last), ["198.51.100.7"]);
    config = withoutBgp(start);
    await announcer.sync("reload");
    assert.deepEqual(serviceVipsInBirdFile(await Deno.readTextFile(file)), []);
    config = start;
    await announcer.sync("reload");
    assert.deepEqual(serviceVipsInBirdFile(applier.last), ["198.51.100.7"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("BirdRoutes judges no Node while [bgp] is removed", async () => {
  const start = await bgpConfig();
  let config = start;
  const { applier, nodes } = await setup();
  nodes.upsert(POD_NODE);
  const announcer = new BirdAnnouncer({
    config: () => config,
    configFile: start.bgp!.config_file,
    host: "cp-1",
    applier,
    readPasswords: () => Promise.resolve(new Map()),
  });
  await announcer.setClusterSource({
    services: new FakeInformer<V1Service>(),
    nodes,
    hasSynced: () => true,
  });
  const routes = new BirdRoutes({
    announcer,
    sessions: { established: () => true, poll: () => Promise.resolve() },
    waitMs: 300,
    config: () => config,
  });
  assert.equal((await routes.listRoutes("k")).length, 1);
  config = withoutBgp(start);
  await announcer.sync("reload");
  await assert.rejects(() => routes.listRoutes("k"), /\[bgp\] was removed .* at a reload/);
  await assert.rejects(
    () =>
      routes.createRoute("k", "", {
        name: "",
        targetNode: "w-1",
        destinationCIDR: "10.244.1.0/24",
      }),
    /Node conditions are left as they are/,
  );
});

Deno.test("'[bgp] is back' is said once BIRD took the file announcing again, not before", async () => {
  const records = await captureLogs();
  try {
    const { config: start, applier, services, announcer, reload } = await setup();
    services.upsert(service("web", "198.51.100.1"));
    await announcer.setClusterSource({
      services,
      nodes: new FakeInformer<V1Node>(),
      hasSynced: () => true,
    });
    const back = () =>
      records.filter((r) => /is back in the configuration/.test(String(r.message.join(""))));
    const withdrawn = () => records.filter((r) => r.level === "warning");
    reload(withoutBgp(start));
    await announcer.sync("reload");
    assert.equal(withdrawn().length, 1);
    reload(await bgpConfig());
    applier.configured = false; // BIRD refused the file announcing again
    await announcer.sync("reload");
    assert.equal(back().length, 0);
    // removed again before BIRD took the file announcing again: the withdrawal is said again
    applier.configured = true;
    reload(withoutBgp(start));
    await announcer.sync("reload");
    assert.equal(withdrawn().length, 2);
    reload(await bgpConfig());
    await announcer.sync("reload");
    assert.equal(back().length, 1);
    await announcer.sync("periodic");
    assert.equal(back().length, 1, "said once");
  } finally {
    await reset();
  }
});
