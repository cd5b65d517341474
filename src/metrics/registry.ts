/**
 * The Prometheus registry. Each subsystem declares its own metrics (in its folder) against the
 * registry it is given; this file owns only the registry, the process and runtime metrics and
 * `keelson_build_info`.
 *
 * @module
 */
import { cpuUsage } from "node:process";
import { Counter, Gauge, type Metric, Registry } from "prom-client";
// one of prom-client's default metrics on its own (its collectDefaultMetrics has no way to leave
// one out): see DEFAULT_METRICS
import processStartTime from "prom-client/lib/metrics/processStartTime.js";
import { VERSION } from "../version.ts";

/** A prom-client default-metric module: registers its metrics on the registry. */
type DefaultMetric = (registry: Registry, config: Record<string, unknown>) => void;

/**
 * Of prom-client's default metrics, only the `process_*` ones with a source under Deno: start
 * time here, and CPU time as processCpuCounters (prom-client's own loads the OpenTelemetry API,
 * 51 modules, for exemplars Keelson never records). The others are Node.js's: `nodejs_version_info` gave the Node.js version Deno
 * emulates (`v26.3.0` on a Deno 2 process), `nodejs_active_handles_total` and
 * `nodejs_active_requests_total` are gauges named like counters (and count libuv objects Deno
 * does not have), `nodejs_gc_*` needs Node's GC hooks, and the heap series are exported from
 * Deno's own numbers as `deno_*` (runtimeMemoryGauges). The ones that read /proc reported 0
 * under the binary's permissions (Deno refuses /proc without `--allow-all`);
 * `process_resident_memory_bytes` comes from `Deno.memoryUsage()` (residentMemoryGauge).
 * prom-client's `eventLoopLag` kept a `monitorEventLoopDelay` histogram for the process's life,
 * 2–9 MB of native memory under Deno; the lag is measured per scrape instead (eventLoopLagGauge).
 */
const DEFAULT_METRICS = [processStartTime] as DefaultMetric[];

/**
 * A fresh registry with process and runtime metrics and `keelson_build_info{version}`.
 * @returns the registry every metric of this process registers in
 */
export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  for (const metric of DEFAULT_METRICS) metric(registry, {});
  processCpuCounters(registry);
  eventLoopLagGauge(registry);
  residentMemoryGauge(registry);
  runtimeMemoryGauges(registry);
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
 * `process_cpu_user_seconds_total`, `process_cpu_system_seconds_total` and
 * `process_cpu_seconds_total`, as prom-client's default metric defines them: the CPU time used
 * since the previous scrape is added at each scrape.
 * @param registry where they register
 */
function processCpuCounters(registry: Registry): void {
  let last = cpuUsage();
  // the first one's collect sets all three: a scrape collects each metric as it writes it, in
  // registration order
  new Counter({
    name: "process_cpu_user_seconds_total",
    help: "Total user CPU time spent in seconds.",
    registers: [registry],
    collect(this: Counter) {
      const now = cpuUsage();
      const userMicros = now.user - last.user;
      const systemMicros = now.system - last.system;
      last = now;
      this.inc(userMicros / 1e6);
      system.inc(systemMicros / 1e6);
      total.inc((userMicros + systemMicros) / 1e6);
    },
  });
  const system = new Counter({
    name: "process_cpu_system_seconds_total",
    help: "Total system CPU time spent in seconds.",
    registers: [registry],
  });
  const total = new Counter({
    name: "process_cpu_seconds_total",
    help: "Total user and system CPU time spent in seconds.",
    registers: [registry],
  });
}

/**
 * `deno_eventloop_lag_seconds`, measured as prom-client measures the lag without a histogram:
 * each scrape schedules an immediate callback and the time it took to run is the value the next
 * scrape shows. No timer runs between scrapes.
 * @param registry where it registers
 */
function eventLoopLagGauge(registry: Registry): void {
  const gauge: Gauge = new Gauge({
    name: "deno_eventloop_lag_seconds",
    help: "Delay of an immediate callback scheduled at the previous scrape, in seconds.",
    registers: [registry],
    collect() {
      const start = performance.now();
      setTimeout(() => gauge.set((performance.now() - start) / 1000), 0);
    },
  });
}

/**
 * The V8 heap and the memory outside it that JavaScript objects hold (buffers), from
 * `Deno.memoryUsage()`, which needs no permission.
 * @param registry where they register
 */
function runtimeMemoryGauges(registry: Registry): void {
  const gauges: Array<[string, string, keyof Deno.MemoryUsage]> = [
    ["deno_heap_used_bytes", "V8 heap in use, in bytes.", "heapUsed"],
    ["deno_heap_total_bytes", "V8 heap reserved, in bytes.", "heapTotal"],
    [
      "deno_external_memory_bytes",
      "Memory held by JavaScript objects outside the V8 heap.",
      "external",
    ],
  ];
  for (const [name, help, field] of gauges) {
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(Deno.memoryUsage()[field]);
      },
    });
  }
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
