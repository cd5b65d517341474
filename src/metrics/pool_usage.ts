/**
 * Pool usage metric names: the one family that exports pool usage
 * (`providers/baremetal/ipam/pool_usage_metrics.ts`), read by the alert rules and the dashboard.
 * MetalLB's `metallb_allocator_addresses_in_use_total` and `metallb_allocator_addresses_total` are
 * gauges; Prometheus keeps `_total` for counters (and `promtool check metrics` flags a gauge so
 * named), so Keelson's drop the suffix; plus the free count.
 *
 * @module
 */

/** In-use addresses per pool and family. */
export const IN_USE_METRIC = "keelson_allocator_addresses_in_use";
/** Usable addresses per pool and family. */
export const TOTAL_METRIC = "keelson_allocator_addresses";
/** Free addresses per pool and family. */
export const FREE_METRIC = "keelson_allocator_addresses_free";
