/**
 * Every `externalTrafficPolicy: Local` judgement reads "which Nodes have a ready endpoint" the same
 * way: BIRD as it runs (its cluster source over the caches) and as `keelson render bird` renders
 * it, keepalived (`localServiceVips` → `localTrafficHosts`) and the service controller's
 * LocalTrafficDropped warning (its endpoint locator). An endpoint that is not serving, one that is
 * terminating and one in an FQDN slice count for none of them.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import type { V1EndpointSlice, V1Node, V1Service } from "@kubernetes/client-node";
import { birdClusterSource } from "../../../../providers/baremetal/bird/start_bird.ts";
import {
  birdHostFile,
  birdServiceVips,
  serviceVipsInBirdFile,
} from "../../../../providers/baremetal/bird/host_config.ts";
import { renderBirdFile } from "../../../../providers/baremetal/bird/render_file.ts";
import { localServiceVips } from "../../../../providers/baremetal/keepalived/announcer.ts";
import { localTrafficHosts } from "../../../../providers/baremetal/local_traffic.ts";
import { createEndpointLocator } from "../../../../src/agent/endpoint_locator.ts";
import { localTrafficWarning } from "../../../../src/controllers/service/local_traffic.ts";
import type { Config } from "../../../../src/config/types.ts";
import { FakeInformer } from "../../_fakes/fake_cluster.ts";
import { bgpConfig } from "./bird/_inventory.ts";

const VIP = "198.51.100.5";
const HOSTS = ["cp-1", "cp-2", "cp-3", "cp-4"];

/** The BGP test inventory with a fourth control-plane host, one per kind of endpoint. */
function config(): Promise<Config> {
  return bgpConfig((text) =>
    text + '\n[[machines]]\nname = "cp-4"\nrole = "control-plane"\nzone = "row-a"\n' +
    'internal_ips = ["10.0.0.14", "fd00::14"]\n'
  );
}

const SERVICE: V1Service = {
  metadata: { name: "local", namespace: "web", uid: "uid-local" },
  spec: { type: "LoadBalancer", externalTrafficPolicy: "Local" },
  status: { loadBalancer: { ingress: [{ ip: VIP }] } },
};

interface EndpointSpec {
  node: string;
  ready?: boolean;
  serving?: boolean;
  terminating?: boolean;
}

function slice(
  name: string,
  endpoints: EndpointSpec[],
  addressType = "IPv4",
  service = "local",
): V1EndpointSlice {
  return {
    metadata: { name, namespace: "web", labels: { "kubernetes.io/service-name": service } },
    addressType,
    endpoints: endpoints.map((e) => ({
      addresses: addressType === "FQDN" ? ["pod.example"] : ["10.244.0.5"],
      nodeName: e.node,
      conditions: {
        ...(e.ready === undefined ? {} : { ready: e.ready }),
        ...(e.serving === undefined ? {} : { serving: e.serving }),
        ...(e.terminating === undefined ? {} : { terminating: e.terminating }),
      },
    })),
  };
}

/**
 * cp-1 ready; cp-2 not serving, cp-3 terminating (neither says `ready: false`, which the looser
 * reading once took for ready); cp-4's only endpoint in an FQDN slice.
 */
const SLICES: V1EndpointSlice[] = [
  slice("local-a", [
    { node: "cp-1", ready: true },
    { node: "cp-2", serving: false },
    { node: "cp-3", serving: true, terminating: true },
  ]),
  slice("local-fqdn", [{ node: "cp-4", ready: true }], "FQDN"),
];

/** What each caller decides, host by host. */
interface Verdicts {
  birdLive: string[];
  birdRender: string[];
  keepalived: string[];
  localTraffic: string[];
  warningEndpoints: string[] | undefined;
}

async function verdicts(
  cfg: Config,
  services: V1Service[],
  slices: V1EndpointSlice[],
): Promise<Verdicts> {
  const sliceCache = new FakeInformer<V1EndpointSlice>();
  for (const s of slices) sliceCache.upsert(s);
  const serviceCache = new FakeInformer<V1Service>();
  for (const s of services) serviceCache.upsert(s);
  const nodeCache = new FakeInformer<V1Node>();
  const source = birdClusterSource({
    services: serviceCache,
    nodes: nodeCache,
    endpointSlices: sliceCache,
  });
  const endpointNodeNames = source.endpointNodeNames!.bind(source);
  const birdLive: string[] = [];
  const birdRender: string[] = [];
  const keepalived: string[] = [];
  for (const host of HOSTS) {
    // the announcer's pipeline as it runs: the file BIRD gets from the caches
    const live = birdHostFile({
      config: cfg,
      host,
      services: serviceCache.list(),
      nodes: [],
      endpointNodeNames,
      nodeReady: true,
      controlPlaneHealthy: true,
    });
    if ("error" in live) throw new Error(live.error);
    if (serviceVipsInBirdFile(live.text).includes(VIP)) birdLive.push(host);
    const rendered = await renderBirdFile({
      announcer: "bird",
      host,
      configFile: "keelson.toml",
      snapshot: { file: "state.yaml", services, nodes: [], endpointSlices: slices },
    }, cfg);
    if (!("text" in rendered)) throw new Error(JSON.stringify(rendered));
    if (serviceVipsInBirdFile(rendered.text).includes(VIP)) birdRender.push(host);
    if (localServiceVips(host, services, slices).get(VIP) === true) keepalived.push(host);
  }
  const locator = createEndpointLocator(sliceCache, nodeCache, () => cfg, () => HOSTS);
  return {
    birdLive,
    birdRender,
    keepalived,
    localTraffic: [
      ...new Set(
        services.flatMap((service) =>
          localTrafficHosts({ service, endpointSlices: slices, nodes: [], servingHosts: HOSTS })
            .hosts
        ),
      ),
    ].sort(),
    warningEndpoints: locator.endpointNodeNames(services[0]!),
  };
}

Deno.test("BIRD, live and rendered, leaves out not-serving, terminating and FQDN-slice endpoints as keepalived does", async () => {
  const cfg = await config();
  const v = await verdicts(cfg, [SERVICE], SLICES);
  assert.deepEqual(v.keepalived, ["cp-1"]);
  assert.deepEqual(v.birdLive, ["cp-1"]);
  assert.deepEqual(v.birdRender, ["cp-1"]);
  assert.deepEqual(v.localTraffic, ["cp-1"]);
  assert.deepEqual(v.warningEndpoints, ["cp-1"]);
  // keepalived says why for each host left out; BIRD's render names each VIP it leaves out
  const decision = localTrafficHosts({
    service: SERVICE,
    endpointSlices: SLICES,
    nodes: [],
    servingHosts: HOSTS,
  });
  assert.deepEqual(decision.excluded.map((e) => [e.host, e.reason]), [
    ["cp-2", "local-endpoints-not-ready"],
    ["cp-3", "local-endpoints-terminating"],
    ["cp-4", "no-local-endpoint"],
  ]);
  for (const host of ["cp-2", "cp-3", "cp-4"]) {
    const rendered = await renderBirdFile({
      announcer: "bird",
      host,
      configFile: "keelson.toml",
      snapshot: { file: "state.yaml", services: [SERVICE], nodes: [], endpointSlices: SLICES },
    }, cfg);
    assert.ok("notes" in rendered);
    assert.ok(
      rendered.notes.includes(
        `Not announcing "${VIP}" of service "web/local" from "${host}": externalTrafficPolicy ` +
          `is Local and no ready endpoint runs on "${host}"`,
      ),
      rendered.notes.join("\n"),
    );
  }
});

Deno.test("the LocalTrafficDropped warning agrees: endpoints that are not serving, terminating or in an FQDN slice are no endpoints", async () => {
  const cfg = await config();
  const slices = new FakeInformer<V1EndpointSlice>();
  for (const s of SLICES) slices.upsert(s);
  const nodes = new FakeInformer<V1Node>();
  // the VIP served by the three hosts whose endpoints count for nothing: traffic is dropped
  const elsewhere = createEndpointLocator(slices, nodes, () => cfg, () => ["cp-2", "cp-3", "cp-4"]);
  assert.match(
    localTrafficWarning(SERVICE, elsewhere, [VIP]) ?? "",
    /none of the endpoints \(on Nodes "cp-1"\) run on a Node that serves the VIP \("cp-2", "cp-3", "cp-4"\)/,
  );
  // served where the ready endpoint runs: nothing to warn about
  const here = createEndpointLocator(slices, nodes, () => cfg, () => ["cp-1", "cp-2"]);
  assert.equal(localTrafficWarning(SERVICE, here, [VIP]), undefined);
  // no ready endpoint at all drops traffic under any policy: not this warning's business
  slices.remove("web/local-a");
  assert.deepEqual(elsewhere.endpointNodeNames(SERVICE), []);
  assert.equal(localTrafficWarning(SERVICE, elsewhere, [VIP]), undefined);
});

Deno.test("BIRD's birdServiceVips with the shared reading gives each excluded host's VIP a reason", async () => {
  const cfg = await config();
  const source = birdClusterSource({
    services: new FakeInformer<V1Service>(),
    nodes: new FakeInformer<V1Node>(),
    endpointSlices: (() => {
      const cache = new FakeInformer<V1EndpointSlice>();
      for (const s of SLICES) cache.upsert(s);
      return cache;
    })(),
  });
  const at = (host: string) =>
    birdServiceVips(cfg, host, [SERVICE], source.endpointNodeNames!.bind(source));
  assert.deepEqual(at("cp-1"), { vips: [VIP], notHere: [] });
  for (const host of ["cp-2", "cp-3", "cp-4"]) {
    assert.deepEqual(at(host).vips, [], host);
    assert.equal(at(host).notHere.length, 1, host);
  }
});

const conditionArb = fc.constantFrom(true, false, undefined);
const endpointArb = fc.record({
  node: fc.constantFrom(...HOSTS),
  ready: conditionArb,
  serving: conditionArb,
  terminating: conditionArb,
});
const sliceArb = fc.record({
  service: fc.constantFrom("local", "other"),
  addressType: fc.constantFrom("IPv4", "IPv6", "FQDN"),
  endpoints: fc.array(endpointArb, { maxLength: 5 }),
});

Deno.test("property: BIRD live, BIRD rendered, keepalived, localTrafficHosts and the warning's locator name the same hosts", async () => {
  const cfg = await config();
  await fc.assert(
    fc.asyncProperty(fc.array(sliceArb, { minLength: 1, maxLength: 4 }), async (specs) => {
      const slices = specs.map((s, i) =>
        slice(`s-${i}`, s.endpoints as EndpointSpec[], s.addressType, s.service)
      );
      const v = await verdicts(cfg, [SERVICE], slices);
      const expected = HOSTS.filter((host) =>
        specs.some((s) =>
          s.service === "local" && s.addressType !== "FQDN" &&
          s.endpoints.some((e) =>
            e.node === host && e.ready !== false && e.serving !== false && e.terminating !== true
          )
        )
      );
      assert.deepEqual(v.keepalived, expected);
      assert.deepEqual(v.birdLive, expected);
      assert.deepEqual(v.birdRender, expected);
      assert.deepEqual(v.localTraffic, expected);
      assert.deepEqual(v.warningEndpoints, expected);
    }),
    { numRuns: 60 },
  );
});
