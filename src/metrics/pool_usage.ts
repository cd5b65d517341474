/**
 * Pool usage metric names (MetalLB's `metallb_allocator_addresses_in_use_total` and
 * `metallb_allocator_addresses_total` with Keelson's prefix, plus the free count): the one family
 * that exports pool usage (`providers/baremetal/ipam/pool_usage_metrics.ts`), read by the alert
 * rules and the dashboard.
 *
 * @module
 */

/** In-use addresses per pool and family. */
export const IN_USE_METRIC = "keelson_allocator_addresses_in_use_total";
/** Usable addresses per pool and family. */
export const TOTAL_METRIC = "keelson_allocator_addresses_total";
/** Free addresses per pool and family. */
export const FREE_METRIC = "keelson_allocator_addresses_free";
