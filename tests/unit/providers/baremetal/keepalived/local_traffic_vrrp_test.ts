/**
 * `externalTrafficPolicy: Local` over VRRP: the group holding a Local Service's VIP tracks a
 * file of its own, which Keelson sets to 1 on a serving host without a ready endpoint of the
 * Service (its priority then drops to 1, so a host with one takes the group) and to 0 where one
 * runs; the values follow the endpoints, the file's text does not (no reload when they move),
 * the announcer writes them before the file that names them, and the root step accepts the file
 * the agent stages.
 */
import assert from "node:assert/strict";
import type { V1Service } from "@kubernetes/client-node";
import {
  KeepalivedAnnouncer,
  keepalivedHostFile,
  type LocalTrackValue,
} from "../../../../../providers/baremetal/keepalived/announcer.ts";
import { LOCAL_TRACK_WEIGHT } from "../../../../../providers/baremetal/keepalived/model.ts";
import { stagedKeepalivedProblem } from "../../../../../providers/baremetal/host_apply/staged_keepalived.ts";
import { ConfigSchema } from "../../../../../src/config/schema.ts";
import type { Config } from "../../../../../src/config/types.ts";

const CONFIG: Config = ConfigSchema.parse({
  keepalived: { interface: "eth0", vrid_range: [100, 119], track_file_dir: "/run/keelson" },
  control_plane: { vip: ["10.250.0.100"] },
  pools: [
    { name: "lan", addresses: ["10.250.1.0/24"] },
    { name: "edge", addresses: ["10.250.2.0/24"], served_by: { roles: ["worker"] } },
  ],
  machines: [
    { name: "cp-1", role: "control-plane", internal_ips: ["10.250.0.11"] },
    { name: "w-1", role: "worker", internal_ips: ["10.250.0.21"] },
    { name: "w-2", role: "worker", internal_ips: ["10.250.0.22"] },
  ],
});

function service(name: string, ip: string, policy?: "Local" | "Cluster"): V1Service {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: "web" },
    spec: {
      type: "LoadBalancer",
      ports: [{ port: 80 }],
      ...(policy ? { externalTrafficPolicy: policy } : {}),
    },
    status: { loadBalancer: { ingress: [{ ip }] } },
  };
}

function slice(service: string, node: string, ready = true): unknown {
  return {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      name: `${service}-1`,
      namespace: "web",
      labels: { "kubernetes.io/service-name": service },
    },
    addressType: "IPv4",
    endpoints: [{ addresses: ["10.244.1.5"], nodeName: node, conditions: { ready } }],
  };
}

function file(host: string, services: V1Service[], endpointSlices?: unknown[]) {
  const out = keepalivedHostFile({
    config: CONFIG,
    host,
    services,
    notifyFifoUser: "keelson",
    ...(endpointSlices ? { endpointSlices } : {}),
  });
  if ("error" in out) throw new Error(out.error);
  return out;
}

const values = (tracks: LocalTrackValue[]) => tracks.map((t) => `${t.path}=${t.value}`);

const LOCAL = service("local", "10.250.2.10", "Local");
const CLUSTER = service("cluster", "10.250.2.20");

Deno.test("a Local Service's group tracks its own file: 1 on the worker without an endpoint, 0 where one runs", () => {
  const slices = [slice("local", "w-2")];
  const w1 = file("w-1", [LOCAL, CLUSTER], slices);
  const w2 = file("w-2", [LOCAL, CLUSTER], slices);
  assert.equal(w1.localTracks.length, 1);
  const path = w1.localTracks[0]!.path;
  assert.match(path, /^\/run\/keelson\/local-v4-g\d+$/);
  assert.deepEqual(values(w1.localTracks), [`${path}=1`]);
  assert.deepEqual(values(w2.localTracks), [`${path}=0`]);
  // the file names it with a weight that brings any priority down to keepalived's floor of 1
  const name = path.slice(path.lastIndexOf("/") + 1).replaceAll("-", "_");
  assert.equal(LOCAL_TRACK_WEIGHT, -253);
  assert.ok(
    w1.text.includes(
      `track_file keelson_${name} {\n    file "${path}"\n    weight -253\n    init_file 0\n}`,
    ),
    w1.text,
  );
  const instance = w1.text.slice(w1.text.indexOf(`vrrp_instance keelson_${name.slice(6)}`));
  assert.match(
    instance.slice(0, instance.indexOf("\n}")),
    new RegExp(`track_file \\{\\n {8}keelson_${name}\\n`),
  );
  // the text does not follow the endpoints: moving them rewrites no file and reloads nothing
  assert.equal(w1.text, file("w-1", [LOCAL, CLUSTER], [slice("local", "w-1")]).text);
  // the control-plane host serves no worker pool: nothing of it there
  assert.deepEqual(file("cp-1", [LOCAL, CLUSTER], slices).localTracks, []);
});

Deno.test("the values follow the endpoints: moved, not ready, not known", () => {
  const moved = [slice("local", "w-1")];
  assert.deepEqual(file("w-1", [LOCAL], moved).localTracks.map((t) => t.value), [0]);
  assert.deepEqual(file("w-2", [LOCAL], moved).localTracks.map((t) => t.value), [1]);
  // an endpoint that is not ready counts as none
  const notReady = [slice("local", "w-1", false)];
  assert.deepEqual(file("w-1", [LOCAL], notReady).localTracks.map((t) => t.value), [1]);
  // no EndpointSlice cache yet: no verdict, no host lowered
  assert.deepEqual(file("w-1", [LOCAL]).localTracks.map((t) => t.value), [0]);
  assert.deepEqual(file("w-2", [LOCAL]).localTracks.map((t) => t.value), [0]);
});

Deno.test("Cluster Services' groups track nothing", () => {
  const out = file("w-1", [CLUSTER, service("explicit", "10.250.2.30", "Cluster")], []);
  assert.deepEqual(out.localTracks, []);
  assert.doesNotMatch(out.text, /keelson_local/);
});

Deno.test("the root step accepts the staged file with a Local group's track, and no track it would not render", () => {
  const judge = (text: string, host: string) =>
    stagedKeepalivedProblem(text, { config: CONFIG, host, agentUser: "keelson" });
  const w1 = file("w-1", [LOCAL, CLUSTER], [slice("local", "w-2")]);
  assert.equal(judge(w1.text, "w-1"), undefined);
  // a track block for a group this host does not have is not Keelson's rendering
  const foreign = w1.text +
    '\ntrack_file keelson_local_v4_g17 {\n    file "/run/keelson/local-v4-g17"\n' +
    "    weight -253\n    init_file 0\n}\n";
  assert.match(judge(foreign, "w-1")!, /not what Keelson renders/);
});

Deno.test("the announcer writes the values before the file and rewrites them when the endpoints move", async () => {
  const dir = await Deno.makeTempDir({ prefix: "keelson-local-track." });
  try {
    const config = ConfigSchema.parse({
      keepalived: {
        interface: "eth0",
        vrid_range: [100, 119],
        track_file_dir: dir,
        config_file: `${dir}/keelson.conf`,
      },
      pools: [{ name: "edge", addresses: ["10.250.2.0/24"], served_by: { roles: ["worker"] } }],
      machines: [
        { name: "w-1", role: "worker", internal_ips: ["10.250.0.21"] },
        { name: "w-2", role: "worker", internal_ips: ["10.250.0.22"] },
      ],
    });
    const name = file("w-1", [LOCAL], []).localTracks[0]!.path.split("/").pop()!;
    const track = () => Deno.readTextFile(`${dir}/${name}`).catch(() => "absent");
    let slices: unknown[] | undefined = undefined;
    const seenAtApply: string[] = [];
    const announcer = new KeepalivedAnnouncer({
      config: () => config,
      configFile: config.keepalived.config_file,
      host: "w-1",
      applier: {
        apply: async () => {
          seenAtApply.push(await track());
          return { result: "success", reloaded: true, message: "captured" };
        },
      },
    });
    await announcer.setServiceSource({
      services: { list: () => [LOCAL], get: () => undefined },
      hasSynced: () => true,
      endpointSlices: () => slices,
    });
    // slices not known yet: 0, written before keepalived reads the file that names it
    assert.deepEqual(seenAtApply, ["0\n"]);
    slices = [slice("local", "w-2")];
    await announcer.sync("endpoints changed");
    assert.equal(await track(), "1\n");
    slices = [slice("local", "w-1")];
    await announcer.sync("endpoints changed");
    assert.equal(await track(), "0\n");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
