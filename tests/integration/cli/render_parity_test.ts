/**
 * `keelson render` prints what `keelson run` applies: every control-plane host's keepalived and
 * BIRD files rendered by the command and by the announcers, fed the same inventory and snapshot
 * (through the caches for the announcers), are byte-identical, including the hosts `run` gates:
 * a machine in maintenance, a host whose Node is NotReady, a retired one (`serving_hold.ts`), and
 * Local Services without an endpoint on the host.
 */
import assert from "node:assert/strict";
import type { V1EndpointSlice, V1Node, V1Service } from "@kubernetes/client-node";
import { reset } from "@logtape/logtape";
import { BirdAnnouncer } from "../../../providers/baremetal/bird/announcer.ts";
import { endpointNodeNames } from "../../../providers/baremetal/bird/start_bird.ts";
import { hostNodeReady } from "../../../providers/baremetal/serving_hold.ts";
import { KeepalivedAnnouncer } from "../../../providers/baremetal/keepalived/announcer.ts";
import { convergedServices } from "../../../providers/baremetal/ipam/plan_allocations.ts";
import { loadConfigFile } from "../../../src/config/load_config.ts";
import { loadSnapshot } from "../../../src/snapshot/load_snapshot.ts";
import { FakeInformer } from "../../unit/_fakes/fake_cluster.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;
const BASE = `${ROOT}tests/unit/config/bgp/base.toml`;
const HOSTS = ["cp-1", "cp-2", "cp-3", "cp-4"];

const INVENTORY_EDITS = (text: string) =>
  text
    // cp-2 in maintenance; cp-4 a retired control-plane machine
    .replace(
      'name = "cp-2"\nrole = "control-plane"\n',
      'name = "cp-2"\nrole = "control-plane"\nstate = "maintenance"\n',
    ) +
  '\n[[machines]]\nname = "cp-4"\nrole = "control-plane"\nstate = "retired"\nzone = "row-a"\n' +
  'internal_ips = ["10.0.0.14"]\n';

function lbService(
  name: string,
  pool: string,
  ip: string | undefined,
  policy: "Cluster" | "Local" = "Cluster",
): string {
  return `- apiVersion: v1
  kind: Service
  metadata:
    name: ${name}
    namespace: default
    uid: uid-${name}
    creationTimestamp: "2024-01-01T00:00:0${name.length % 10}Z"
    annotations: { keelson.io/address-pool: ${pool} }
  spec: { type: LoadBalancer, externalTrafficPolicy: ${policy}, ports: [{ port: 80 }] }
  status: { loadBalancer: { ${ip ? `ingress: [{ ip: ${ip} }]` : ""} } }
`;
}

function node(name: string, ip: string, ready: "True" | "False", podCidr: string): string {
  return `- apiVersion: v1
  kind: Node
  metadata: { name: ${name} }
  spec: { podCIDRs: [${podCidr}] }
  status:
    addresses: [{ type: InternalIP, address: ${ip} }]
    conditions: [{ type: Ready, status: "${ready}" }]
`;
}

function slice(service: string, nodes: string[]): string {
  return `- apiVersion: discovery.k8s.io/v1
  kind: EndpointSlice
  addressType: IPv4
  metadata:
    name: ${service}-abc
    namespace: default
    labels: { kubernetes.io/service-name: ${service} }
  endpoints: [${
    nodes.map((n) => `{ addresses: [10.244.0.9], nodeName: ${n}, conditions: { ready: true } }`)
      .join(", ")
  }]
`;
}

const SNAPSHOT = `apiVersion: v1
kind: List
items:
${lbService("web", "bgp-public", "198.51.100.4")}${
  lbService("local-here", "bgp-public", "198.51.100.5", "Local")
}${lbService("local-none", "bgp-public", "198.51.100.6", "Local")}${
  lbService("pending-bgp", "bgp-public", undefined)
}${lbService("vrrp", "vrrp-pool", "192.0.2.3")}${
  lbService("pending-vrrp", "vrrp-pool", undefined)
}${node("cp-1", "10.0.0.11", "True", "10.244.1.0/24")}${
  node("cp-2", "10.0.0.12", "True", "10.244.2.0/24")
}${node("cp-3", "10.0.1.13", "False", "10.244.3.0/24")}${
  node("w-1", "10.0.0.21", "True", "10.244.4.0/24")
}${slice("local-here", ["cp-1", "w-1"])}${slice("local-none", [])}- apiVersion: v1
  kind: Pod
  metadata: { name: p, namespace: default }
`;

async function keelson(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", `${ROOT}main.ts`, ...args],
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: output.code, out: decode(output.stdout), err: decode(output.stderr) };
}

/** The texts the announcers hand their appliers, fed from caches holding the snapshot. */
async function announced(configPath: string, statePath: string, dir: string, host: string) {
  const config = await loadConfigFile(configPath);
  const snapshot = await loadSnapshot(statePath);
  // the cluster as it is once the leader has allocated the pending Services
  const services = new FakeInformer<V1Service>();
  for (const s of convergedServices(config, snapshot.services)) services.upsert(s);
  const nodes = new FakeInformer<V1Node>();
  for (const n of snapshot.nodes) nodes.upsert(n);
  const slices = new FakeInformer<V1EndpointSlice>();
  for (const s of snapshot.endpointSlices ?? []) slices.upsert(s);

  const keepalivedTexts: string[] = [];
  const keepalived = new KeepalivedAnnouncer({
    config: () => config,
    host,
    configFile: `${dir}/absent-keepalived.conf`,
    notifyFifoUser: "keelson",
    readAddresses: () => Promise.resolve([]),
    withdrawTimeoutMs: 0,
    applier: {
      apply: (text: string) => {
        keepalivedTexts.push(text);
        return Promise.resolve({ result: "success", reloaded: true, message: "captured" });
      },
    },
  });
  // as start_keepalived.ts wires it
  await keepalived.setServiceSource({
    services,
    hasSynced: () => true,
    nodeReady: () => hostNodeReady(nodes, host),
  });

  const birdTexts: string[] = [];
  const bird = new BirdAnnouncer({
    config: () => config,
    configFile: `${dir}/absent-bird.conf`,
    host,
    applier: {
      apply: (text: string) => {
        birdTexts.push(text);
        return Promise.resolve({ result: "success", configured: true, message: "captured" });
      },
    },
    // as start_bird.ts wires it; the offline render takes the local apiserver as ready
    controlPlaneHealthy: () => true,
    healthy: () => hostNodeReady(nodes, host),
    readPasswords: () => Promise.resolve(new Map()),
  });
  await bird.setClusterSource({
    services,
    nodes,
    hasSynced: () => true,
    endpointNodeNames: (service) => endpointNodeNames(slices, service),
  });
  return { keepalived: keepalivedTexts.at(-1), bird: birdTexts.at(-1) };
}

Deno.test("render prints byte for byte what the announcers apply, gated hosts and Local Services included", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const configPath = `${dir}/keelson.toml`;
    const statePath = `${dir}/state.yaml`;
    await Deno.writeTextFile(configPath, INVENTORY_EDITS(await Deno.readTextFile(BASE)));
    await Deno.writeTextFile(statePath, SNAPSHOT);
    const seen: Record<string, string> = {};
    for (const host of HOSTS) {
      const fromRun = await announced(configPath, statePath, dir, host);
      for (const what of ["keepalived", "bird"] as const) {
        const printed = await keelson(
          "render",
          what,
          "--config",
          configPath,
          "--state",
          statePath,
          "--host",
          host,
        );
        assert.equal(printed.code, 0, `${what} ${host}: ${printed.err}`);
        assert.ok(fromRun[what], `the ${what} announcer of ${host} applied a file`);
        assert.equal(printed.out, fromRun[what], `render ${what} --host ${host} differs from run`);
        seen[`${what} ${host}`] = printed.out;
      }
    }
    // the inputs did reach the files: the comparison is not between two empty renders
    const bgpRoutes = (text: string) =>
      [...text.matchAll(/route (198\.51\.100\.\d+)\/32 blackhole;/g)].map((m) => m[1]).sort();
    const pendingBgp = bgpRoutes(seen["bird cp-1"]!).filter((ip) =>
      !["198.51.100.4", "198.51.100.5"].includes(ip!)
    );
    assert.equal(
      pendingBgp.length,
      1,
      `${pendingBgp} the pending BGP Service's planned address is announced`,
    );
    assert.ok(bgpRoutes(seen["bird cp-1"]!).includes("198.51.100.5"), "Local with endpoint here");
    assert.ok(!seen["bird cp-1"]!.includes("198.51.100.6/32"), "Local without endpoint: never");
    assert.deepEqual(bgpRoutes(seen["bird cp-2"]!), [], "maintenance: no Service VIP");
    assert.deepEqual(bgpRoutes(seen["bird cp-3"]!), [], "Node NotReady: no Service VIP");
    assert.match(seen["bird cp-1"]!, /route 10\.0\.0\.10\/32 blackhole;/, "control-plane VIP");
    assert.ok(!seen["bird cp-2"]!.includes("route 10.0.0.10/32"), "maintenance: no cp VIP");
    assert.match(seen["keepalived cp-1"]!, /192\.0\.2\.3/);
    assert.doesNotMatch(seen["keepalived cp-4"]!, /vrrp_instance/, "retired: no VRRP instance");
    assert.doesNotMatch(
      seen["keepalived cp-2"]!,
      /vrrp_instance/,
      "maintenance: every VIP held back",
    );
    assert.doesNotMatch(seen["keepalived cp-3"]!, /192\.0\.2\.3/, "Node NotReady: no Service VIP");
    assert.match(
      seen["bird cp-3"]!,
      /route 10\.0\.0\.10\/32 blackhole;/,
      "Node NotReady keeps the control-plane VIP (the apiserver's)",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
    await reset();
  }
});
