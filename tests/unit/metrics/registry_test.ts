import assert from "node:assert/strict";
import { Counter } from "prom-client";
import {
  createMetricsRegistry,
  declareOnce,
  EVENT_LOOP_SAMPLE_MS,
} from "../../../src/metrics/registry.ts";
import { NodeController } from "../../../src/controllers/node/node_controller.ts";
import { NodeLifecycleController } from "../../../src/controllers/node_lifecycle/node_lifecycle_controller.ts";
import { PvLabelsController } from "../../../src/controllers/pv_labels/pv_labels_controller.ts";
import { FakeCluster } from "../_fakes/fake_cluster.ts";
import { BaremetalInstances } from "../../../providers/baremetal/instances.ts";
import { sampleConfig } from "../_fakes/test_inventory.ts";

Deno.test("declareOnce() returns the registered metric instead of registering it twice", () => {
  const registry = createMetricsRegistry();
  const make = () =>
    new Counter({ name: "keelson_test_total", help: "test", registers: [registry] });
  const first = declareOnce(registry, "keelson_test_total", make);
  assert.equal(declareOnce(registry, "keelson_test_total", make), first);
});

Deno.test("controllers can be built again on one registry (each leadership builds them anew)", () => {
  const registry = createMetricsRegistry();
  const cluster = new FakeCluster();
  const config = sampleConfig();
  const instances = new BaremetalInstances(() => ({ config, healthy: true }));
  const build = () => {
    new NodeController({
      nodes: cluster.nodes,
      writer: cluster,
      events: cluster.events,
      instances,
      registry,
    });
    new NodeLifecycleController({
      nodes: cluster.nodes,
      writer: cluster,
      events: cluster.events,
      instances,
      registry,
    });
    new PvLabelsController({
      volumes: cluster.persistentVolumes,
      nodes: cluster.nodes,
      writer: cluster,
      registry,
    });
  };
  build();
  build();
  assert.ok(registry.getSingleMetric("keelson_node_deletions_total"));
});

Deno.test("createMetricsRegistry samples the event-loop lag every EVENT_LOOP_SAMPLE_MS, not every 10 ms", async () => {
  const registry = createMetricsRegistry();
  // the series exist as upstream Node processes export them
  const text = await registry.metrics();
  assert.match(text, /^nodejs_eventloop_lag_seconds /m);
  assert.ok(
    EVENT_LOOP_SAMPLE_MS >= 100,
    "a 10 ms sampler wakes an idle process 100 times a second",
  );
  registry.clear();
});
