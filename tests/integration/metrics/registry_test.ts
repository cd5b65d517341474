import assert from "node:assert/strict";
import { Counter } from "prom-client";
import { createMetricsRegistry, declareOnce } from "../../../src/metrics/registry.ts";
import { NodeController } from "../../../src/controllers/node/node_controller.ts";
import { NodeLifecycleController } from "../../../src/controllers/node_lifecycle/node_lifecycle_controller.ts";
import { PvLabelsController } from "../../../src/controllers/pv_labels/pv_labels_controller.ts";
import { FakeCluster } from "../../unit/_fakes/fake_cluster.ts";
import { firstTermLedger } from "../../unit/_fakes/memory_leases.ts";
import { BaremetalInstances } from "../../../providers/baremetal/instances.ts";
import { sampleConfig } from "../../unit/_fakes/test_inventory.ts";
import { ROOT_URL, runAsShipped } from "../_harness/run_as_shipped.ts";

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
      ledger: firstTermLedger(Date.now).ledger,
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

Deno.test("createMetricsRegistry exports process and Deno runtime metrics, no Node.js series and no lag histogram", async () => {
  const registry = createMetricsRegistry();
  const first = await registry.metrics();
  for (
    const name of [
      "process_cpu_seconds_total",
      "process_cpu_user_seconds_total",
      "process_cpu_system_seconds_total",
      "process_resident_memory_bytes",
      "process_start_time_seconds",
      "deno_heap_used_bytes",
      "deno_heap_total_bytes",
      "deno_external_memory_bytes",
      "deno_eventloop_lag_seconds",
      "keelson_build_info",
    ]
  ) {
    assert.match(first, new RegExp(`^${name}[ {]`, "m"), name);
  }
  // a Deno process is not Node.js: no nodejs_version_info{version="v26.3.0"}, no libuv counts
  assert.doesNotMatch(first, /^(# TYPE )?nodejs_/m);
  const heap = Number(/^deno_heap_used_bytes (\S+)$/m.exec(first)?.[1]);
  assert.ok(heap > 1024 * 1024 && heap < 4 * 1024 ** 3, `heap ${heap}`);
  // no monitorEventLoopDelay histogram (2-9 MB of RSS under Deno): no percentile series
  assert.doesNotMatch(first, /eventloop_lag_(p50|p99|max|mean)_seconds/);
  // the lag a scrape schedules shows at the next one: a small non-negative number of seconds
  await new Promise((resolve) => setTimeout(resolve, 20));
  const lag = Number(
    /^deno_eventloop_lag_seconds (\S+)$/m.exec(await registry.metrics())?.[1],
  );
  assert.ok(lag >= 0 && lag < 5, `lag ${lag}`);
  registry.clear();
});

Deno.test("createMetricsRegistry measures memory with the compiled binary's permissions and exports no /proc series", async () => {
  // Deno refuses /proc without --allow-all: prom-client's /proc collectors reported 0 there
  const run = await runAsShipped(`
import { createMetricsRegistry } from "${ROOT_URL}src/metrics/registry.ts";
console.log(await createMetricsRegistry().metrics());
`);
  assert.equal(run.code, 0, run.stderr);
  const rss = Number(/^process_resident_memory_bytes (\S+)$/m.exec(run.stdout)?.[1]);
  assert.ok(rss > 10 * 1024 * 1024 && rss < 4 * 1024 ** 3, `rss ${rss}`);
  assert.doesNotMatch(
    run.stdout,
    /^process_(virtual_memory_bytes|heap_bytes|open_fds|max_fds)[ {]/m,
    "series without a source under the baked permissions",
  );
});
