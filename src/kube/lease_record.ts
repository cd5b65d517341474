/**
 * The leader-election record of a Lease, as client-go compares it: a change in any of its fields
 * restarts the expiry countdown.
 *
 * @module
 */
import type { V1Lease } from "@kubernetes/client-node";

/**
 * A Lease time (a Date when we wrote it, a string when read back) in ms since the epoch.
 * @param value the field
 * @returns ms, or undefined when absent or unparsable
 */
export function timeMs(value: unknown): number | undefined {
  if (value instanceof Date) return value.getTime();
  if (typeof value === "string") {
    const ms = Date.parse(value);
    return Number.isNaN(ms) ? undefined : ms;
  }
  return undefined;
}

// The fields that make up client-go's LeaderElectionRecord; a change in any of them restarts the
// expiry countdown. Times are normalised because reads return strings and writes send Dates.
/**
 * @param lease the Lease
 * @returns a string that changes whenever the leader-election record changes
 */
export function recordKey(lease: V1Lease | undefined): string {
  const spec = lease?.spec ?? {};
  return JSON.stringify([
    spec.holderIdentity ?? "",
    spec.leaseDurationSeconds ?? 0,
    timeMs(spec.acquireTime) ?? null,
    timeMs(spec.renewTime) ?? null,
    spec.leaseTransitions ?? 0,
  ]);
}
