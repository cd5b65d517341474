/**
 * `needsUpdate`: which Service changes re-trigger EnsureLoadBalancer (as upstream's function of the
 * same name). Status, finalizers, labels and the selector never do, so the controller's own writes
 * do not loop.
 *
 * @module
 */
import type { V1Service, V1ServicePort } from "@kubernetes/client-node";

/** Options of `needsUpdate`. */
export interface NeedsUpdateOptions {
  /** Whether the controller handles a Service (type LoadBalancer and our class). */
  handles: (service: V1Service) => boolean;
  /**
   * Annotations the provider writes on a Service as a record of what it did, never read as a
   * request (`LoadBalancer.recordAnnotations`). Upstream re-ensures on any annotation change;
   * counting these would make every allocation re-trigger a second full ensure of the same
   * Service (two more event writes each). @default none
   */
  recordAnnotations?: readonly string[];
}

/**
 * Whether the change from `old` to `service` needs a new sync.
 *
 * Upstream's triggers (type/wants-LB, source ranges, ports, session affinity, loadBalancerIP,
 * externalIPs, any annotation, UID, externalTrafficPolicy, healthCheckNodePort, the number of
 * ipFamilies), plus three of ours: the class, the whole ipFamilies list and ipFamilyPolicy (our
 * provider allocates one address per family), and a newly set deletionTimestamp. One exception:
 * the provider's record annotations, which it writes itself after allocating, are ignored.
 * @param old the Service before
 * @param service the Service after
 * @param options which Services are handled, and the provider's record annotations
 * @returns true when the Service must be synced again
 */
export function needsUpdate(
  old: V1Service,
  service: V1Service,
  options: NeedsUpdateOptions,
): boolean {
  const { handles } = options;
  if (handles(old) !== handles(service)) return true;
  if (!old.metadata?.deletionTimestamp && service.metadata?.deletionTimestamp) return true;
  if ((old.metadata?.uid ?? "") !== (service.metadata?.uid ?? "")) return true;
  const records = new Set(options.recordAnnotations ?? []);
  if (!recordsEqual(old.metadata?.annotations, service.metadata?.annotations, records)) {
    return true;
  }
  const a = old.spec ?? {};
  const b = service.spec ?? {};
  return (a.type ?? "") !== (b.type ?? "") ||
    (a.loadBalancerClass ?? "") !== (b.loadBalancerClass ?? "") ||
    !listsEqual(a.loadBalancerSourceRanges, b.loadBalancerSourceRanges) ||
    !portsEqual(a.ports, b.ports) ||
    (a.sessionAffinity ?? "") !== (b.sessionAffinity ?? "") ||
    JSON.stringify(a.sessionAffinityConfig ?? null) !==
      JSON.stringify(b.sessionAffinityConfig ?? null) ||
    (a.loadBalancerIP ?? "") !== (b.loadBalancerIP ?? "") ||
    !listsEqual(a.externalIPs, b.externalIPs) ||
    (a.externalTrafficPolicy ?? "") !== (b.externalTrafficPolicy ?? "") ||
    (a.healthCheckNodePort ?? 0) !== (b.healthCheckNodePort ?? 0) ||
    !listsEqual(a.ipFamilies, b.ipFamilies) ||
    (a.ipFamilyPolicy ?? "") !== (b.ipFamilyPolicy ?? "");
}

function listsEqual(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  const left = a ?? [];
  const right = b ?? [];
  return left.length === right.length && left.every((value, index) => value === right[index]);
}

function recordsEqual(
  a: Readonly<Record<string, string>> | undefined,
  b: Readonly<Record<string, string>> | undefined,
  ignored: ReadonlySet<string>,
): boolean {
  const left = Object.entries(a ?? {}).filter(([key]) => !ignored.has(key));
  const right = b ?? {};
  const rightCount = Object.keys(right).filter((key) => !ignored.has(key)).length;
  return left.length === rightCount &&
    left.every(([key, value]) => Object.hasOwn(right, key) && right[key] === value);
}

function portsEqual(
  a: readonly V1ServicePort[] | undefined,
  b: readonly V1ServicePort[] | undefined,
): boolean {
  const left = a ?? [];
  const right = b ?? [];
  return left.length === right.length && left.every((port, index) => {
    const other = right[index];
    return other !== undefined &&
      (port.name ?? "") === (other.name ?? "") &&
      (port.protocol ?? "") === (other.protocol ?? "") &&
      port.port === other.port &&
      (port.nodePort ?? 0) === (other.nodePort ?? 0) &&
      String(port.targetPort ?? "") === String(other.targetPort ?? "") &&
      (port.appProtocol ?? "") === (other.appProtocol ?? "");
  });
}
