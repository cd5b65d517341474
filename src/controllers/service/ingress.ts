/**
 * Comparing and writing `status.loadBalancer.ingress`. Only the ingress list is compared, as
 * upstream, over `ip`, `hostname`, `ipMode` and `ports[]`; the provider's answer is written as is
 * (status_patch.ts).
 *
 * @module
 */
import type { V1LoadBalancerIngress, V1PortStatus, V1Service } from "@kubernetes/client-node";

/**
 * The Service's current ingress list (empty when none).
 * @param service the Service
 * @returns its `status.loadBalancer.ingress`, or `[]`
 */
export function currentIngress(service: V1Service): V1LoadBalancerIngress[] {
  return service.status?.loadBalancer?.ingress ?? [];
}

/**
 * Whether two ingress lists are semantically equal (order matters, absent equals empty).
 * @param a one list
 * @param b the other
 * @returns true when no status write is needed
 */
export function ingressEqual(
  a: readonly V1LoadBalancerIngress[] | undefined,
  b: readonly V1LoadBalancerIngress[] | undefined,
): boolean {
  const left = a ?? [];
  const right = b ?? [];
  if (left.length !== right.length) return false;
  return left.every((entry, index) => ingressEntryEqual(entry, right[index]));
}

function ingressEntryEqual(
  a: V1LoadBalancerIngress,
  b: V1LoadBalancerIngress | undefined,
): boolean {
  if (!b) return false;
  if ((a.ip ?? "") !== (b.ip ?? "")) return false;
  if ((a.hostname ?? "") !== (b.hostname ?? "")) return false;
  if ((a.ipMode ?? "") !== (b.ipMode ?? "")) return false;
  const portsA = a.ports ?? [];
  const portsB = b.ports ?? [];
  return portsA.length === portsB.length &&
    portsA.every((port, index) => portStatusEqual(port, portsB[index]));
}

function portStatusEqual(a: V1PortStatus, b: V1PortStatus | undefined): boolean {
  return b !== undefined && a.port === b.port && a.protocol === b.protocol &&
    (a.error ?? "") === (b.error ?? "");
}

/**
 * The addresses (or hostnames) of an ingress list, for messages.
 * @param ingress the list
 * @returns e.g. `"203.0.113.5", "2001:db8::5"`
 */
export function describeIngress(ingress: readonly V1LoadBalancerIngress[]): string {
  return ingress.map((entry) => `"${entry.ip ?? entry.hostname ?? ""}"`).join(", ");
}
