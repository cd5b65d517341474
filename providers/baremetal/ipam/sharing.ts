/**
 * MetalLB's rules for two Services on one address: both carry the same sharing key, their
 * `protocol/port` pairs do not overlap, and when either uses `externalTrafficPolicy: Local` both
 * select the same backends (the address can only be announced where both Services' pods are).
 * Pure.
 *
 * @module
 */
import type { SharingProfile } from "./service_requests.ts";

/**
 * Why `candidate` may not share an address with `holder`, or undefined when it may.
 * @param holderKey `namespace/name` of the Service holding the address
 * @param holder its sharing profile; undefined = unknown (a Service we do not manage), never shares
 * @param candidate the sharing profile of the Service that wants the address
 * @returns a sentence naming the holder and the conflicting values, or undefined
 */
export function sharingConflict(
  holderKey: string,
  holder: SharingProfile | undefined,
  candidate: SharingProfile,
): string | undefined {
  if (holder === undefined) {
    return `service "${holderKey}" holds it and is not managed by this load balancer`;
  }
  if (holder.key === undefined) {
    return `service "${holderKey}" holds it without a sharing key`;
  }
  if (candidate.key === undefined) {
    return `service "${holderKey}" holds it and this service has no sharing key`;
  }
  if (holder.key !== candidate.key) {
    return `service "${holderKey}" holds it with sharing key "${holder.key}", not "${candidate.key}"`;
  }
  if (holder.backendKey !== candidate.backendKey) {
    return `service "${holderKey}" holds it with sharing key "${holder.key}" but the backends ` +
      `differ (externalTrafficPolicy Local requires the same selector on both services)`;
  }
  const overlap = candidate.ports.filter((p) => holder.ports.includes(p));
  if (overlap.length > 0) {
    return `service "${holderKey}" holds it with sharing key "${holder.key}" and also uses ` +
      `port ${overlap.map((p) => `"${p}"`).join(", ")}`;
  }
  return undefined;
}
