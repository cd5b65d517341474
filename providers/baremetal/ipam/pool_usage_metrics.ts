/**
 * Pool usage as MetalLB reports it (`metallb_allocator_addresses_in_use_total`,
 * `metallb_allocator_addresses_total`), named as Prometheus names gauges (no `_total`), with
 * Keelson's prefix and a `family` label, plus the free count, so dashboards and the "pool above
 * 90 %" alert need no arithmetic on label values.
 *
 * @module
 */
import { Gauge, type Registry } from "prom-client";
import { FREE_METRIC, IN_USE_METRIC, TOTAL_METRIC } from "../../../src/metrics/pool_usage.ts";
import type { PoolStats } from "./allocator.ts";

/**
 * Registers the three gauges, read from `stats` at each scrape (a reload replaces them).
 * @param registry the process's registry
 * @param stats the allocator's current usage (after any refresh the caller needs)
 */
export function registerPoolUsageGauges(registry: Registry, stats: () => PoolStats[]): void {
  for (const name of [IN_USE_METRIC, TOTAL_METRIC, FREE_METRIC]) registry.removeSingleMetric(name);
  let cached: { at: number; stats: PoolStats[] } | undefined;
  // the three gauges are collected one after the other in one scrape: share one refresh
  const read = (): PoolStats[] => {
    const now = Date.now();
    if (!cached || now - cached.at > 500) cached = { at: now, stats: stats() };
    return cached.stats;
  };
  const gauge = (name: string, help: string, value: (s: PoolStats) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ["pool", "family"],
      registers: [registry],
      collect() {
        this.reset();
        for (const s of read()) {
          this.set({ pool: s.pool, family: `IPv${s.family}` }, value(s));
        }
      },
    });
  gauge(IN_USE_METRIC, "Addresses of each pool and family used by Services.", (s) => s.used);
  gauge(TOTAL_METRIC, "Usable addresses of each pool and family.", (s) => Number(s.total));
  gauge(
    FREE_METRIC,
    "Usable addresses of each pool and family not used by any Service.",
    (s) => Math.max(0, Number(s.total) - s.used),
  );
}
