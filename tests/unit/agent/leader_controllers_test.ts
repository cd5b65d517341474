import assert from "node:assert/strict";
import type { V1EndpointSlice, V1PersistentVolume } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import type { CloudProvider, ProviderContext } from "../../../src/cloud/provider.ts";
import type { ClusterCaches } from "../../../src/agent/cluster_caches.ts";
import {
  managedControllersGauge,
  runLeaderControllers,
} from "../../../src/agent/leader_controllers.ts";
import { ReloadDeletionGuard } from "../../../src/controllers/node_lifecycle/deletion_guards.ts";
import type { KubeClient } from "../../../src/kube/kube_client.ts";
import { HealthChecks } from "../../../src/server/health_checks.ts";
import { FakeCluster, FakeInformer } from "../_fakes/fake_cluster.ts";
import { sampleConfig } from "../_fakes/test_inventory.ts";
import { createBaremetalProvider } from "../../../providers/baremetal/mod.ts";

const runnable = <T extends object>(informer: T) =>
  Object.assign(informer, { run: () => Promise.resolve() });

async function series(registry: Registry): Promise<Record<string, number>> {
  const metric = await managedControllersGauge(registry).get();
  return Object.fromEntries(metric.values.map((v) => [String(v.labels.name), v.value]));
}

Deno.test("runLeaderControllers() initializes the provider, then runs only the enabled controllers and reports exactly those as running", async () => {
  const cases: [enabled: string[], running: string[]][] = [
    [["*"], ["cloud-node", "cloud-node-lifecycle", "pv-labels"]],
    [["*", "-cloud-node-lifecycle"], ["cloud-node", "pv-labels"]],
    [["pv-labels"], ["pv-labels"]],
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
      provider,
      registry,
      health,
      guard: new ReloadDeletionGuard(),
    }, leading.signal);
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(initialized.length, 1, "initialize once per term, before the controllers");
    assert.equal(initialized[0]!.signal, leading.signal);
    assert.equal(initialized[0]!.events, undefined, "no service controller, no provider events");
    const during = await series(registry);
    assert.deepEqual(
      Object.keys(during).filter((name) => during[name] === 1).sort(),
      running,
      `--controllers ${enabled.join(",")}`,
    );
    leading.abort();
    await done;
    const after = await series(registry);
    assert.ok(Object.values(after).every((v) => v === 0), "all 0 once leading ends");
  }
});
