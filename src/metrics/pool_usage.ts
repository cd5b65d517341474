/**
 * Pool usage metric names and a reader of their current values, so the heartbeat can publish what
 * a scrape would show. MetalLB's `metallb_allocator_addresses_in_use_total` and
 * `metallb_allocator_addresses_total` are gauges; Prometheus keeps `_total` for counters (and
 * `promtool check metrics` flags a gauge so named), so Keelson's drop the suffix.
 *
 * @module
 */
import type { Registry } from "prom-client";
import { compareCodeUnits } from "../text/code_unit_order.ts";

/** In-use addresses per pool and family. */
export const IN_USE_METRIC = "keelson_allocator_addresses_in_use";
/** Usable addresses per pool and family. */
export const TOTAL_METRIC = "keelson_allocator_addresses";
/** Free addresses per pool and family. */
export const FREE_METRIC = "keelson_allocator_addresses_free";

/** One pool and family. */
export interface PoolUsage {
  pool: string;
  family: "IPv4" | "IPv6";
  total: number;
  used: number;
}

/**
 * Collects the pool gauges now (as a scrape does).
 * @param registry the process's registry
 * @returns usage per pool and family, sorted; empty when no pool gauge is registered
 */
export async function readPoolUsage(registry: Registry): Promise<PoolUsage[]> {
  const total = registry.getSingleMetric(TOTAL_METRIC);
  const used = registry.getSingleMetric(IN_USE_METRIC);
  if (!total || !used) return [];
  const usedValues = (await used.get()).values;
  const pools: PoolUsage[] = [];
  for (const v of (await total.get()).values) {
    const pool = String(v.labels.pool ?? "");
    const family = v.labels.family === "IPv6" ? "IPv6" : "IPv4";
    const inUse = usedValues.find((u) => u.labels.pool === pool && u.labels.family === family);
    pools.push({ pool, family, total: v.value, used: inUse?.value ?? 0 });
  }
  return pools.sort((a, b) =>
    compareCodeUnits(a.pool, b.pool) || compareCodeUnits(a.family, b.family)
  );
}
