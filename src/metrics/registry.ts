/**
 * The Prometheus registry. Each subsystem declares its own metrics (in its folder) against the
 * registry it is given; this file owns only the registry, the default process metrics and
 * `keelson_build_info`.
 *
 * @module
 */
import { collectDefaultMetrics, Gauge, Registry } from "prom-client";
import { VERSION } from "../version.ts";

/**
 * A fresh registry with process metrics and `keelson_build_info{version}`.
 * @returns the registry every metric of this process registers in
 */
export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const build = new Gauge({
    name: "keelson_build_info",
    help: "Keelson build information; the value is always 1.",
    labelNames: ["version", "deno_version"],
    registers: [registry],
  });
  build.set({ version: VERSION, deno_version: Deno.version.deno }, 1);
  return registry;
}
