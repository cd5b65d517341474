/**
 * The Prometheus registry. Each subsystem declares its own metrics (in its folder) against the
 * registry it is given; this file owns only the registry, the default process metrics and
 * `keelson_build_info`.
 *
 * @module
 */
import { collectDefaultMetrics, Gauge, type Metric, Registry } from "prom-client";
import { VERSION } from "../version.ts";

/** How often the event-loop lag is sampled (`nodejs_eventloop_lag_*`), in ms. */
export const EVENT_LOOP_SAMPLE_MS = 100;

/**
 * A fresh registry with process metrics and `keelson_build_info{version}`.
 * @returns the registry every metric of this process registers in
 */
export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  // nodejs_eventloop_lag_* sampled every 100 ms instead of prom-client's 10: its timer woke the
  // process 100 times a second, 3 of the 5 ms of CPU per second an idle `keelson run` used
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
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
