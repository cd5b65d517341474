/**
 * Which Nodes have a ready endpoint of a Service, from its EndpointSlices
 * (`kubernetes.io/service-name`): the one reading behind every `externalTrafficPolicy: Local`
 * judgement (the service controller's LocalTrafficDropped warning, BIRD announcing a Local VIP,
 * keepalived holding one through `providers/baremetal/local_traffic.ts`).
 *
 * The Service and the slices come from the API and are untrusted: kinds and versions checked,
 * only address slices read (kube-proxy ignores FQDN ones), names checked, sizes bounded, unknown
 * shapes skipped. An endpoint counts as ready only when nothing says otherwise: `ready` absent
 * counts (the API's convention), `serving: false` does not, and a terminating endpoint never
 * does, whatever else it says. Pure.
 *
 * @module
 */
import { compareCodeUnits } from "../text/code_unit_order.ts";

/** At most this many EndpointSlices are read; more is a broken or hostile input. */
export const MAX_ENDPOINT_SLICES = 10_000;
/** At most this many endpoints are read per slice (the API allows 1000). */
export const MAX_ENDPOINTS_PER_SLICE = 1_000;
/** A Kubernetes object name (DNS subdomain) is at most this long; longer names are ignored. */
const MAX_NAME_LENGTH = 253;

/** What a Service's endpoints on one Node amount to: one ready endpoint is enough. */
export type EndpointState = "ready" | "not-ready" | "terminating";

/** The parts of a Service the endpoint reading needs. */
export interface ServiceRef {
  readonly namespace: string;
  readonly name: string;
  /**
   * `Local` only for exactly that value; `Cluster` also for none or an unknown one, as
   * kube-proxy treats it.
   */
  readonly policy: "Cluster" | "Local";
}

/**
 * A Service's namespace, name and traffic policy.
 * @param raw the Service as the API returned it
 * @returns undefined when it is no Service or its name or namespace is no object name
 */
export function readServiceRef(raw: unknown): ServiceRef | undefined {
  if (!isRecord(raw)) return undefined;
  if (raw.kind !== undefined && raw.kind !== "Service") return undefined;
  const metadata = raw.metadata;
  if (!isRecord(metadata) || !isObjectName(metadata.name) || !isObjectName(metadata.namespace)) {
    return undefined;
  }
  const spec = isRecord(raw.spec) ? raw.spec : {};
  const policy = spec.externalTrafficPolicy === "Local" ? "Local" : "Cluster";
  return { namespace: metadata.namespace, name: metadata.name, policy };
}

/**
 * The state of a Service's endpoints on each Node that has any: `ready` when one of them is
 * ready, else `not-ready` when one is not terminating, else `terminating`.
 * @param slices EndpointSlices as the API returned them, any Service's
 * @param service the Service (`readServiceRef`)
 * @returns Node name to state; a Node without an endpoint of the Service is absent
 */
export function endpointStatesByNode(
  slices: readonly unknown[],
  service: Pick<ServiceRef, "namespace" | "name">,
): Map<string, EndpointState> {
  const states = new Map<string, EndpointState>();
  for (const slice of slices.slice(0, MAX_ENDPOINT_SLICES)) {
    if (!isRecord(slice)) continue;
    if (slice.kind !== undefined && slice.kind !== "EndpointSlice") continue;
    if (slice.apiVersion !== undefined && slice.apiVersion !== "discovery.k8s.io/v1") continue;
    // kube-proxy ignores FQDN slices; only address slices carry traffic
    if (slice.addressType !== "IPv4" && slice.addressType !== "IPv6") continue;
    const metadata = slice.metadata;
    if (!isRecord(metadata) || metadata.namespace !== service.namespace) continue;
    const labels = metadata.labels;
    if (!isRecord(labels) || labels["kubernetes.io/service-name"] !== service.name) continue;
    if (!Array.isArray(slice.endpoints)) continue;
    for (const endpoint of slice.endpoints.slice(0, MAX_ENDPOINTS_PER_SLICE)) {
      if (!isRecord(endpoint) || !isObjectName(endpoint.nodeName)) continue;
      const state = endpointState(endpoint.conditions);
      const before = states.get(endpoint.nodeName);
      if (before === undefined || rank(state) > rank(before)) states.set(endpoint.nodeName, state);
    }
  }
  return states;
}

/**
 * The Node names of a Service's ready endpoints.
 * @param slices EndpointSlices as the API returned them, any Service's
 * @param service the Service as the API returned it
 * @returns the names, sorted and unique; undefined for a Service that cannot be read (no
 *   verdict, as `localTrafficHosts` treats it)
 * @example
 * readyEndpointNodeNames(slices, service) // ["w-1", "w-3"]
 */
export function readyEndpointNodeNames(
  slices: readonly unknown[],
  service: unknown,
): string[] | undefined {
  const ref = readServiceRef(service);
  if (ref === undefined) return undefined;
  return [...endpointStatesByNode(slices, ref)]
    .filter(([, state]) => state === "ready")
    .map(([node]) => node)
    .sort(compareCodeUnits);
}

/**
 * Whether a value is an object name as this reading accepts a Node's: a non-empty string of
 * lowercase DNS characters within the bound. A caller that matches its own host names against
 * endpoints' Nodes checks them with the same rule.
 * @param value anything
 */
export function isObjectName(value: unknown): value is string {
  return typeof value === "string" && value.length > 0 && value.length <= MAX_NAME_LENGTH &&
    /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(value);
}

/** One endpoint's state. */
function endpointState(conditions: unknown): EndpointState {
  const c = isRecord(conditions) ? conditions : {};
  if (c.terminating === true) return "terminating";
  if (c.ready === false || c.serving === false) return "not-ready";
  if (c.ready !== undefined && c.ready !== null && c.ready !== true) return "not-ready";
  return "ready";
}

/** The most useful state of a Node's several endpoints wins: ready, then not ready. */
function rank(state: EndpointState): number {
  return state === "ready" ? 2 : state === "not-ready" ? 1 : 0;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
