/**
 * The Prometheus registry. Each subsystem declares its own metrics (in its folder) against the
 * registry it is given; this file owns only the registry, the default process metrics and
 * `keelson_build_info`.
 *
 * @module
 */
import { Gauge, type Metric, Registry } from "prom-client";
// prom-client's default metrics one by one (its collectDefaultMetrics has no way to leave one
// out), all but its event-loop histogram and the ones that read /proc: see DEFAULT_METRICS
import processCpuTotal from "prom-client/lib/metrics/processCpuTotal.js";
import processStartTime from "prom-client/lib/metrics/processStartTime.js";
import processHandles from "prom-client/lib/metrics/processHandles.js";
import processRequests from "prom-client/lib/metrics/processRequests.js";
import heapSizeAndUsed from "prom-client/lib/metrics/heapSizeAndUsed.js";
import heapSpacesSizeAndUsed from "prom-client/lib/metrics/heapSpacesSizeAndUsed.js";
import version from "prom-client/lib/metrics/version.js";
import gc from "prom-client/lib/metrics/gc.js";
import { VERSION } from "../version.ts";

/** A prom-client default-metric module: registers its metrics on the registry. */
type DefaultMetric = (registry: Registry, config: Record<string, unknown>) => void;

/**
 * prom-client's default metrics without `eventLoopLag` and without the three that read /proc
 * (`osMemoryHeap`, `processOpenFileDescriptors`, `processMaxFileDescriptors`): Deno refuses /proc
 * without `--allow-all`, so in the compiled binary they reported 0 bytes of memory and 0 open
 * files, or nothing. `process_resident_memory_bytes` comes from `Deno.memoryUsage()` instead
 * (residentMemoryGauge); virtual memory, the data segment and file descriptors have no source
 * and are not exported.
 *
 * `eventLoopLag` keeps a
 * `perf_hooks.monitorEventLoopDelay` histogram for the process's whole life, whose buffer under
 * Deno is 2 MB at creation and grows to 4-9 MB with the delays of start-up (a zero-filled block
 * found in the agent's memory map). `nodejs_eventloop_lag_seconds` is measured as prom-client
 * measures it without a histogram (eventLoopLagGauge); the min/max/mean/percentile series since
 * process start are not exported.
 */
const DEFAULT_METRICS = [
  processCpuTotal,
  processStartTime,
  processHandles,
  processRequests,
  heapSizeAndUsed,
  heapSpacesSizeAndUsed,
  version,
  gc,
] as DefaultMetric[];

/**
 * A fresh registry with process metrics and `keelson_build_info{version}`.
 * @returns the registry every metric of this process registers in
 */
export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  for (const metric of DEFAULT_METRICS) metric(registry, {});
  eventLoopLagGauge(registry);
  residentMemoryGauge(registry);
  const build = new Gauge({
    name: "keelson_build_info",
    help: "Keelson build information; the value is always 1.",
    labelNames: ["version", "deno_version"],
    registers: [registry],
  });
  build.set({ version: VERSION, deno_version: Deno.version.deno }, 1);
  return registry;
}

/**
 * `nodejs_eventloop_lag_seconds` as prom-client reports it without a histogram: each scrape
 * schedules an immediate callback and the time it took to run is the value the next scrape
 * shows. No timer runs between scrapes.
 * @param registry where it registers
 */
function eventLoopLagGauge(registry: Registry): void {
  const gauge: Gauge = new Gauge({
    name: "nodejs_eventloop_lag_seconds",
    help: "Lag of event loop in seconds.",
    registers: [registry],
    collect() {
      const start = performance.now();
      setTimeout(() => gauge.set((performance.now() - start) / 1000), 0);
    },
  });
}

/**
 * `process_resident_memory_bytes` from `Deno.memoryUsage().rss`, which needs no permission (as
 * prom-client measures it where there is no /proc).
 * @param registry where it registers
 */
function residentMemoryGauge(registry: Registry): void {
  new Gauge({
    name: "process_resident_memory_bytes",
    help: "Resident memory size in bytes.",
    registers: [registry],
    collect() {
      this.set(Deno.memoryUsage().rss);
    },
  });
}

/**
 * The metric named `name` on `registry`, created by `create` the first time. Controllers are
 * rebuilt on every leadership acquisition, and prom-client refuses a second registration of one
 * name, so per-controller metrics are declared through this.
 * @param registry the process's registry
 * @param name the metric name `create` registers
 * @param create builds and registers the metric
 * @returns the metric
 */
export function declareOnce<T extends Metric>(
  registry: Registry,
  name: string,
  create: () => T,
): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? create();
}
