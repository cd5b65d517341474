import assert from "node:assert/strict";
import type { V1EndpointSlice, V1Lease, V1PersistentVolume } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { runAgent } from "../../../src/agent/agent.ts";
import type { ClusterCaches } from "../../../src/agent/cluster_caches.ts";
import { runLeaderControllers } from "../../../src/agent/leader_controllers.ts";
import { declareStartupMetrics } from "../../../src/agent/startup_metrics.ts";
import type { CloudProvider } from "../../../src/cloud/provider.ts";
import { ReloadDeletionGuard } from "../../../src/controllers/node_lifecycle/deletion_guards.ts";
import type { KubeClient } from "../../../src/kube/kube_client.ts";
import { WorkQueue } from "../../../src/kube/work_queue.ts";
import { HealthChecks } from "../../../src/server/health_checks.ts";
import { createBaremetalProvider } from "../../../providers/baremetal/mod.ts";
import { FakeCluster, FakeInformer } from "../_fakes/fake_cluster.ts";
import { sampleConfig, testConfig } from "../_fakes/test_inventory.ts";
import { pollUntil } from "../../_support/poll.ts";

/** The sample lines of one metric family in a text exposition, keyed by their labels. */
function samples(text: string, name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const space = line.lastIndexOf(" ");
    out.set(line.slice(name.length, space), Number(line.slice(space + 1)));
  }
  return out;
}

/** The `name` labels of the workqueue series on a registry. */
async function queueNames(registry: Registry): Promise<string[]> {
  const text = await registry.metrics();
  return [...samples(text, "workqueue_adds_total").keys()]
    .map((labels) => /name="([^"]*)"/.exec(labels)?.[1] ?? "")
    .sort();
}

const fakeLoadBalancer = {} as NonNullable<CloudProvider["loadBalancer"]>;

Deno.test("declareStartupMetrics() gives leader status 0, the rest_client families and each queue at zero", async () => {
  const registry = new Registry();
  const config = sampleConfig();
  const provider = { ...createBaremetalProvider(() => ({ config, healthy: true })) };
  declareStartupMetrics(registry, config, { ...provider, loadBalancer: fakeLoadBalancer });
  const text = await registry.metrics();
  assert.deepEqual([...samples(text, "leader_election_master_status")], [['{name="keelson"}', 0]]);
  assert.deepEqual([...samples(text, "leader_election_slowpath_total")], [['{name="keelson"}', 0]]);
  for (const family of ["rest_client_requests_total", "rest_client_request_duration_seconds"]) {
    assert.match(text, new RegExp(`^# TYPE ${family} `, "m"), family);
  }
  for (const queue of ["Nodes", "service", "service-nodes", "PersistentVolumeLabels"]) {
    for (const family of ["workqueue_depth", "workqueue_adds_total", "workqueue_retries_total"]) {
      assert.equal(samples(text, family).get(`{name="${queue}"}`), 0, `${family} ${queue}`);
    }
    for (
      const family of [
        "workqueue_unfinished_work_seconds",
        "workqueue_longest_running_processor_seconds",
        "workqueue_queue_duration_seconds_count",
        "workqueue_work_duration_seconds_count",
      ]
    ) assert.equal(samples(text, family).get(`{name="${queue}"}`), 0, `${family} ${queue}`);
  }
});

Deno.test("declareStartupMetrics(): no leader series without leader election, no queue of a controller that cannot start", async () => {
  const registry = new Registry();
  const base = sampleConfig();
  const config = {
    ...base,
    "leader_election": { ...base.leader_election, enabled: false },
    controllers: { ...base.controllers, enabled: ["*", "-pv-labels"] },
  };
  // no LoadBalancer: the service controller cannot start, so its queues are not declared
  declareStartupMetrics(
    registry,
    config,
    createBaremetalProvider(() => ({ config, healthy: true })),
  );
  const text = await registry.metrics();
  assert.equal(samples(text, "leader_election_master_status").size, 0);
  assert.deepEqual(await queueNames(registry), ["Nodes"]);
});

Deno.test("the queues declared at start are exactly the queues the leader's controllers create", async () => {
  const runnable = <T extends object>(informer: T) =>
    Object.assign(informer, { run: () => Promise.resolve() });
  for (
    const enabled of [["*"], ["*", "-service"], ["cloud-node-lifecycle", "route"], ["pv-labels"]]
  ) {
    const config = { ...sampleConfig(), controllers: { ...sampleConfig().controllers, enabled } };
    const provider: CloudProvider = {
      ...createBaremetalProvider(() => ({ config, healthy: true })),
      loadBalancer: fakeLoadBalancer,
    };
    const declared = new Registry();
    declareStartupMetrics(declared, config, provider);
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
    const created = new Registry();
    const leading = new AbortController();
    const done = runLeaderControllers({
      config: () => config,
      clients: { client: () => ({ core: {} }) as unknown as KubeClient },
      caches,
      heartbeatLeases: runnable(new FakeInformer<V1Lease>()),
      host: "cp-1",
      provider,
      registry: created,
      health: new HealthChecks(),
      guard: new ReloadDeletionGuard(),
    }, leading.signal);
    const expected = JSON.stringify(await queueNames(declared));
    await pollUntil(
      `the queues of ${enabled.join(",")}`,
      async () => JSON.stringify(await queueNames(created)) === expected,
    ).catch(() => undefined); // the assertion below shows the difference
    leading.abort();
    await done;
    assert.deepEqual(await queueNames(declared), await queueNames(created), enabled.join(","));
  }
});

Deno.test("declaring a queue that already runs keeps its values", async () => {
  const registry = new Registry();
  const queue = new WorkQueue({ name: "Nodes", registry });
  queue.add("a");
  queue.add("b");
  declareStartupMetrics(
    registry,
    sampleConfig(),
    createBaremetalProvider(() => ({ config: sampleConfig(), healthy: true })),
  );
  const text = await registry.metrics();
  assert.equal(samples(text, "workqueue_depth").get('{name="Nodes"}'), 2);
  assert.equal(samples(text, "workqueue_adds_total").get('{name="Nodes"}'), 2);
  queue.shutDown();
});

Deno.test("runAgent(): /metrics has the leader, API client and work-queue series while no kubeconfig can be read", async () => {
  const dir = await Deno.makeTempDir({ prefix: "keelson-startup-metrics." });
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  const controller = new AbortController();
  let running: Promise<number> | undefined;
  try {
    const configPath = `${dir}/keelson.toml`;
    await Deno.writeTextFile(configPath, "");
    const config = testConfig({
      // unreadable: the agent retries every 10 s and never reaches an API server
      kubernetes: { kubeconfig: `${dir}/missing-kubeconfig` },
      server: { listen: `127.0.0.1:${port}` },
      keepalived: { enabled: false },
      machines: [{ name: "cp-1", role: "control-plane" }],
    });
    running = runAgent({
      configPath,
      config,
      applyFlags: (c) => c,
      host: "cp-1",
      signal: controller.signal,
    });
    const { value: text } = await pollUntil(
      "an answer from /metrics",
      () =>
        fetch(`http://127.0.0.1:${port}/metrics`)
          .then((r) => r.ok ? r.text() : (r.body?.cancel(), undefined), () => undefined),
      { intervalMs: 100 },
    );
    assert.equal(samples(text, "leader_election_master_status").get('{name="keelson"}'), 0);
    assert.match(text, /^# TYPE rest_client_requests_total counter$/m);
    assert.equal(samples(text, "workqueue_depth").get('{name="Nodes"}'), 0);
    assert.equal(samples(text, "workqueue_depth").get('{name="service"}'), 0);
  } finally {
    controller.abort();
    if (running) assert.equal(await running, 0);
    await Deno.remove(dir, { recursive: true });
  }
});
