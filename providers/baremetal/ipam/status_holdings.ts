/**
 * What the API says each Service holds: the addresses in `status.loadBalancer.ingress`, the pool
 * named by `keelson.io/allocated-from-pool`, and who may share them. This is the only input the
 * allocator is rebuilt from (the API is the only state). Every Service with ingress addresses
 * counts, whatever its type or class: an address in any status is never handed to another. Pure.
 *
 * @module
 */
import type { V1Service } from "@kubernetes/client-node";
import type { Config } from "../../../src/config/types.ts";
import { objectKey } from "../../../src/kube/ports.ts";
import { matchesClass } from "../../../src/cloud/load_balancer_class.ts";
import type { Allocator, RestoreOptions } from "./allocator.ts";
import { ANNOTATIONS, readServiceRequest } from "./service_requests.ts";

/** One Service's addresses according to the API. */
export interface StatusHolding {
  serviceKey: string;
  /** Addresses from `status.loadBalancer.ingress[].ip`, as written. */
  ips: string[];
  /** What `Allocator.restore` needs besides the addresses. */
  options: RestoreOptions;
}

/**
 * The addresses of a Service's `status.loadBalancer.ingress`.
 * @param service the Service
 * @returns the `ip` fields (hostnames are ignored)
 */
export function ingressIps(service: V1Service): string[] {
  const ingress: unknown = service.status?.loadBalancer?.ingress;
  if (!Array.isArray(ingress)) return [];
  // typed by the API server, but a snapshot or a fake may hold anything
  return ingress.flatMap((e: unknown) => {
    const ip = e !== null && typeof e === "object" ? (e as { ip?: unknown }).ip : undefined;
    return typeof ip === "string" && ip !== "" ? [ip] : [];
  });
}

/**
 * What one Service holds according to the API.
 * @param config the configuration (for the class filter)
 * @param service the Service
 * @returns its holding, or undefined when its status has no ingress address
 */
export function statusHolding(config: Config, service: V1Service): StatusHolding | undefined {
  const ips = ingressIps(service);
  if (ips.length === 0) return undefined;
  const managed = matchesClass(config, service);
  const request = managed ? readServiceRequest(service) : undefined;
  return {
    serviceKey: objectKey(service),
    ips,
    options: {
      pool: service.metadata?.annotations?.[ANNOTATIONS.allocatedFromPool],
      // a malformed Service still holds its addresses, it just shares with nobody
      sharing: request?.ok ? request.request.sharing : undefined,
      managed,
      created: creationTime(service),
    },
  };
}

/**
 * What each Service with ingress addresses holds, sorted by key.
 * @param config the configuration (for the class filter)
 * @param services every Service of the cluster (a lister's snapshot)
 * @returns one entry per Service with at least one ingress address
 */
export function statusHoldings(config: Config, services: readonly V1Service[]): StatusHolding[] {
  return services.flatMap((service) => statusHolding(config, service) ?? [])
    .sort((a, b) => (a.serviceKey < b.serviceKey ? -1 : 1));
}

/**
 * Registers every holding in the allocator.
 * @param allocator the allocator (pools already set)
 * @param holdings from `statusHoldings`
 */
export function restoreHoldings(allocator: Allocator, holdings: readonly StatusHolding[]): void {
  for (const h of holdings) allocator.restore(h.serviceKey, h.ips, h.options);
}

/** The Service's creation time in ms, or undefined when absent or unreadable. */
function creationTime(service: V1Service): number | undefined {
  const raw: unknown = service.metadata?.creationTimestamp;
  if (raw === undefined || raw === null) return undefined;
  const ms = new Date(raw as string | Date).getTime();
  return Number.isNaN(ms) ? undefined : ms;
}
