import assert from "node:assert/strict";
import type {
  CoreV1Event,
  V1EndpointSlice,
  V1Lease,
  V1PersistentVolume,
} from "@kubernetes/client-node";
import { Registry } from "prom-client";
import type { CloudProvider, ProviderContext } from "../../../src/cloud/provider.ts";
import type { ClusterCaches } from "../../../src/agent/cluster_caches.ts";
import {
  managedControllersGauge,
  runLeaderControllers,
} from "../../../src/agent/leader_controllers.ts";
import { CANONICAL_NAMES, type ControllerName } from "../../../src/config/controller_names.ts";
import { ReloadDeletionGuard } from "../../../src/controllers/node_lifecycle/deletion_guards.ts";
import type { KubeClient } from "../../../src/kube/kube_client.ts";
import { HealthChecks } from "../../../src/server/health_checks.ts";
import { FakeCluster, FakeInformer } from "../_fakes/fake_cluster.ts";
import { sampleConfig, testConfig } from "../_fakes/test_inventory.ts";
import { KubeApiError } from "../../../src/kube/ports.ts";
import {
  decodeJudgement,
  type Judgement,
  JUDGEMENT_ANNOTATION,
} from "../../../src/status/leader_judgement.ts";
import { createBaremetalProvider } from "../../../providers/baremetal/mod.ts";
import { pollUntil } from "../../_support/poll.ts";

const runnable = <T extends object>(informer: T) =>
  Object.assign(informer, { run: () => Promise.resolve() });

async function series(registry: Registry): Promise<Record<string, number>> {
  const metric = await managedControllersGauge(registry).get();
  return Object.fromEntries(metric.values.map((v) => [String(v.labels.name), v.value]));
}

Deno.test("runLeaderControllers() initializes the provider, then runs only the enabled controllers and reports exactly those as running", async () => {
  const cases: [enabled: string[], running: string[]][] = [
    [["*"], ["cloud-node", "cloud-node-lifecycle", "pv-labels", "vip-host"]],
    [["*", "-cloud-node-lifecycle"], ["cloud-node", "pv-labels", "vip-host"]],
    [["pv-labels"], ["pv-labels"]],
    // the VIP-host controller is switched like the others, by its short or its upstream-style name
    [["*", "-vip-host"], ["cloud-node", "cloud-node-lifecycle", "pv-labels"]],
    [["vip-host-controller"], ["vip-host"]],
  ];
  for (const [enabled, running] of cases) {
    const config = { ...sampleConfig(), controllers: { ...sampleConfig().controllers, enabled } };
    const cluster = new FakeCluster();
    const caches: ClusterCaches = {
      nodes: runnable(cluster.nodes),
      services: runnable(cluster.services),
      volumes: runnable(new FakeInformer<V1PersistentVolume>()),
      endpointSlices: runnable(new FakeInformer<V1EndpointSlice>()),
      synced: () => true,
      waitForSyncAll: () => Promise.resolve(true),
      run: () => Promise.resolve(),
    };
    const initialized: ProviderContext[] = [];
    // no LoadBalancer: the service controller is enabled by "*" but cannot start
    const provider: CloudProvider = {
      ...createBaremetalProvider(() => ({ config, healthy: true })),
      initialize: (context) => {
        initialized.push(context);
        return Promise.resolve();
      },
    };
    const registry = new Registry();
    const health = new HealthChecks();
    const leading = new AbortController();
    const done = runLeaderControllers({
      config: () => config,
      clients: { client: () => ({ core: {} }) as unknown as KubeClient },
      caches,
      heartbeatLeases: runnable(new FakeInformer<V1Lease>()),
      host: "cp-1",
      provider,
      registry,
      health,
      guard: new ReloadDeletionGuard(),
    }, leading.signal);
    await pollUntil("the provider initialized", () => initialized.length > 0);
    assert.equal(initialized.length, 1, "initialize once per term, before the controllers");
    assert.equal(initialized[0]!.signal, leading.signal);
    assert.equal(initialized[0]!.events, undefined, "no service controller, no provider events");
    const during = await series(registry);
    assert.deepEqual(
      Object.keys(during).filter((name) => during[name] === 1).sort(),
      running,
      `--controllers ${enabled.join(",")}`,
    );
    // one health check per running controller, under its upstream-style name
    assert.deepEqual(
      health.evaluate().results.filter((r) => r.ok).map((r) => r.name).sort(),
      running.map((name) => CANONICAL_NAMES[name as ControllerName]).sort(),
      `health checks with --controllers ${enabled.join(",")}`,
    );
    leading.abort();
    await done;
    const after = await series(registry);
    assert.ok(Object.values(after).every((v) => v === 0), "all 0 once leading ends");
  }
});

Deno.test("runLeaderControllers(): the controllers' Events name --host as their source, not the OS host name", async () => {
  const config = {
    ...sampleConfig(),
    controllers: { ...sampleConfig().controllers, enabled: ["service"] },
  };
  const cluster = new FakeCluster();
  const caches: ClusterCaches = {
    nodes: runnable(cluster.nodes),
    services: runnable(cluster.services),
    volumes: runnable(new FakeInformer<V1PersistentVolume>()),
    endpointSlices: runnable(new FakeInformer<V1EndpointSlice>()),
    synced: () => true,
    waitForSyncAll: () => Promise.resolve(true),
    run: () => Promise.resolve(),
  };
  const written: CoreV1Event[] = [];
  const rest = {
    create: (_path: string, event: CoreV1Event) => {
      written.push(event);
      return Promise.resolve(event);
    },
    patch: (_path: string, patch: CoreV1Event) => Promise.resolve(patch),
  };
  const base = createBaremetalProvider(() => ({ config, healthy: true }));
  const provider: CloudProvider = {
    ...base,
    loadBalancer: {
      getLoadBalancer: () => Promise.resolve({ status: {}, exists: false }),
      getLoadBalancerName: () => "lb",
      ensureLoadBalancer: () => Promise.resolve({}),
      updateLoadBalancer: () => Promise.resolve(),
      ensureLoadBalancerDeleted: () => Promise.resolve(),
    },
    // the provider's Events on Services go through the service controller's recorder
    initialize: (context) => {
      initialized = true;
      context.events?.event(
        { kind: "Service", metadata: { name: "web", namespace: "shop" } },
        "Warning",
        "AddressNotInPool",
        "no pool offers 10.9.9.9",
      );
      return Promise.resolve();
    },
  };
  let initialized = false;
  const host = "cp-7";
  assert.notEqual(Deno.hostname(), host, "the OS host name must differ for this test to tell");
  const leading = new AbortController();
  const done = runLeaderControllers({
    config: () => config,
    clients: { client: () => ({ core: {}, rest }) as unknown as KubeClient },
    caches,
    heartbeatLeases: runnable(new FakeInformer<V1Lease>()),
    host,
    provider,
    registry: new Registry(),
    health: new HealthChecks(),
    guard: new ReloadDeletionGuard(),
  }, leading.signal);
  await pollUntil("the provider initialized", () => initialized);
  leading.abort();
  await done;
  assert.equal(written.length, 1, "the Event is written by the time leading has ended");
  assert.equal(written[0]!.source?.host, host);
  assert.equal(written[0]!.reportingInstance, host);
  assert.equal(written[0]!.source?.component, "service-controller");
});

Deno.test("runLeaderControllers(): the published judgement names every serving host as one that must report, the workers a pool selects included", async () => {
  const config = testConfig({
    controllers: { enabled: ["pv-labels"] },
    pools: [
      { name: "edge", addresses: ["192.0.2.0/28"], served_by: { roles: ["worker"] } },
      { name: "inner", addresses: ["192.0.2.32/28"] },
    ],
    machines: [
      { name: "cp-1", role: "control-plane" },
      { name: "cp-2", role: "control-plane", state: "retired" },
      { name: "w-1", role: "worker" },
      { name: "w-2", role: "worker", state: "retired" },
    ],
  });
  const cluster = new FakeCluster();
  const caches: ClusterCaches = {
    nodes: runnable(cluster.nodes),
    services: runnable(cluster.services),
    volumes: runnable(new FakeInformer<V1PersistentVolume>()),
    endpointSlices: runnable(new FakeInformer<V1EndpointSlice>()),
    synced: () => true,
    waitForSyncAll: () => Promise.resolve(true),
    run: () => Promise.resolve(),
  };
  const published: V1Lease[] = [];
  const rest = {
    get: () => Promise.reject(new KubeApiError("not found", { code: 404, reason: "NotFound" })),
    create: (_path: string, lease: V1Lease) => {
      published.push(lease);
      return Promise.resolve({ ...lease, metadata: { ...lease.metadata, resourceVersion: "1" } });
    },
    replace: (_path: string, lease: V1Lease) => {
      published.push(lease);
      return Promise.resolve(lease);
    },
  };
  const leading = new AbortController();
  const done = runLeaderControllers({
    identity: "cp-1_x",
    config: () => config,
    clients: { client: () => ({ core: {}, rest }) as unknown as KubeClient },
    caches,
    heartbeatLeases: runnable(new FakeInformer<V1Lease>()),
    host: "cp-1",
    provider: createBaremetalProvider(() => ({ config, healthy: true })),
    registry: new Registry(),
    health: new HealthChecks(),
    guard: new ReloadDeletionGuard(),
  }, leading.signal);
  try {
    const lease = (await pollUntil("the judgement published", () => published[0])).value;
    const judgement = decodeJudgement(
      lease.metadata!.annotations![JUDGEMENT_ANNOTATION]!,
    ) as Judgement;
    assert.deepEqual(judgement.control_plane, ["cp-1", "w-1"]);
  } finally {
    leading.abort();
    await done;
  }
});
