/**
 * The bounds of a heartbeat report, in one place: the schema every reader parses with
 * (`host_report.ts`) and the writer's fitting (`fit_host_report.ts`) both use these, so whatever
 * the writer publishes every reader accepts.
 *
 * What a host has to report is not bounded by the inventory alone: its VIPs come from the
 * Services of the cluster (keepalived can serve 20 per VRID, up to 255 VRIDs per family), its pod
 * routes from the Nodes. So at a bound the report is cut, never refused: the lists keep their
 * first entries, `omitted` counts what was left out, and the host stays visible (its heartbeat
 * renewed, its other fields whole). Readers judge what was left out as unknown, never as absent.
 *
 * @module
 */

/**
 * Bytes of the report annotation. The API allows 256 KiB for all of an object's annotations
 * together; a quarter is left to others. Every field of a report is ASCII: characters are bytes.
 */
export const MAX_REPORT_BYTES = 192 * 1024;

/** Entries per list: the reader's parse stays bounded whatever a Lease holds. */
export const REPORT_LIST_LIMITS = {
  /** keepalived instances (VRIDs per family: at most 255 each). */
  instances: 1024,
  /** VIPs of one instance. */
  instanceVips: 4096,
  /** VIPs on the interface. */
  vips: 4096,
  /** Pool usage rows (pool and family). */
  pools: 256,
  /** BGP sessions. */
  peers: 256,
  /** Prefixes exported to one peer. */
  routes: 16384,
  /** Start-only settings changed since the start. */
  restart: 64,
  /** Machines whose power the host reports (the leader polls their BMCs). */
  power: 2048,
  /** Announcers running on the host (a provider has a handful). */
  announcers: 16,
} as const;

/** The lists that can be cut, as named in the report's `omitted` counts. */
export const OMITTED_KEYS = [
  "instances",
  "instance_vips",
  "vips",
  "pools",
  "peers",
  "routes",
  "restart",
  "power",
] as const;

/**
 * What a cut report left out: per list, how many entries (`instance_vips` and `routes` summed
 * over the instances and peers, those of instances and peers left out included).
 */
export type Omitted = Partial<Record<(typeof OMITTED_KEYS)[number], number>>;

/**
 * Bytes kept free for the `omitted` object when the writer cuts by size: its eight counts, each
 * at most 2^53, with their keys, quotes and commas take less than this.
 */
export const OMITTED_RESERVE_BYTES = 320;
