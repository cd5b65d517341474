/**
 * Which of a pool's serving hosts may announce (BGP) or hold (VRRP) a Service's VIP.
 *
 * With `externalTrafficPolicy: Local`, kube-proxy on a Node delivers the Service's traffic only to
 * endpoints on that Node and drops it when there is none, so a VIP is worth announcing only from a
 * serving host with a ready local endpoint; that host also keeps the client's source address. With
 * `Cluster`, every serving host may serve the VIP and kube-proxy forwards it on. Either way a host
 * whose Node is not Ready serves nothing.
 *
 * The Service, its EndpointSlices and the Nodes come from the API and are untrusted. Which Nodes
 * have a ready endpoint is the one reading of `src/kube/endpoint_nodes.ts` (as for BIRD and the
 * service controller's warning); this file adds the Nodes' readiness and the serving hosts, each
 * read as defensively (kinds checked, sizes bounded, unknown shapes skipped). Pure.
 *
 * @module
 */
import { compareCodeUnits } from "../../src/text/code_unit_order.ts";
import {
  type EndpointState,
  endpointStatesByNode,
  isObjectName,
  readServiceRef,
} from "../../src/kube/endpoint_nodes.ts";
import { countsReady } from "../../src/kube/node_ready.ts";

/** At most this many Nodes are read. */
export const MAX_NODES = 10_000;

/** Why a serving host may not serve a Service's VIP. */
export type ExclusionReason =
  | "node-not-ready"
  | "no-local-endpoint"
  | "local-endpoints-not-ready"
  | "local-endpoints-terminating";

/** A serving host left out, and why. */
export interface ExcludedHost {
  /** The host's name (its Node's name). */
  readonly host: string;
  /** The reason, as a fixed code. */
  readonly reason: ExclusionReason;
  /** The reason for an operator. Built from fixed text and the host name only. */
  readonly message: string;
}

/** The decision for one Service. */
export interface LocalTrafficDecision {
  /**
   * The policy the decision followed: `Cluster` also for a Service without one or with an
   * unknown value, as kube-proxy treats it.
   */
  readonly policy: "Cluster" | "Local";
  /**
   * False when the policy is Local but no EndpointSlices were known (no cache yet): no verdict on
   * endpoints then, and every Ready serving host may serve the VIP, as for Cluster.
   */
  readonly endpointsKnown: boolean;
  /** The serving hosts that may announce or hold the VIP, sorted and unique. */
  readonly hosts: readonly string[];
  /** The serving hosts left out, sorted by host. */
  readonly excluded: readonly ExcludedHost[];
}

/** The inputs: raw objects as the API returned them. */
export interface LocalTrafficInput {
  /** The Service (`v1`). */
  readonly service: unknown;
  /** EndpointSlices (`discovery.k8s.io/v1`), any Service's; undefined when not known. */
  readonly endpointSlices: readonly unknown[] | undefined;
  /** Nodes (`v1`); a serving host without a Node (not registered yet) counts as Ready. */
  readonly nodes: readonly unknown[];
  /** The Node names of the pool's serving hosts (`poolServers`). */
  readonly servingHosts: readonly string[];
}

/**
 * The serving hosts that may announce or hold a Service's VIP, and a reason for each one left out.
 * @param input the Service, the EndpointSlices, the Nodes and the pool's serving hosts
 * @returns the decision; a Service that cannot be read is treated as Cluster
 * @example
 * localTrafficHosts({ service, endpointSlices, nodes, servingHosts: ["w-1", "w-2"] })
 * // { policy: "Local", endpointsKnown: true, hosts: ["w-1"], excluded: [{ host: "w-2", reason: "no-local-endpoint", ... }] }
 */
export function localTrafficHosts(input: LocalTrafficInput): LocalTrafficDecision {
  const service = readServiceRef(input.service);
  const policy = service?.policy ?? "Cluster";
  const notReadyNodes = readNotReadyNodes(input.nodes);
  const hosts = [...new Set(input.servingHosts.filter(isObjectName))].sort(compareCodeUnits);
  const endpoints =
    policy === "Local" && service !== undefined && input.endpointSlices !== undefined
      ? endpointStatesByNode(input.endpointSlices, service)
      : undefined;

  const chosen: string[] = [];
  const excluded: ExcludedHost[] = [];
  for (const host of hosts) {
    if (notReadyNodes.has(host)) {
      excluded.push(exclusion(host, "node-not-ready"));
      continue;
    }
    if (endpoints !== undefined) {
      const state = endpoints.get(host);
      if (state !== "ready") {
        excluded.push(exclusion(host, state === undefined ? "no-local-endpoint" : REASONS[state]));
        continue;
      }
    }
    chosen.push(host);
  }
  return {
    policy,
    endpointsKnown: policy === "Cluster" || endpoints !== undefined,
    hosts: chosen,
    excluded,
  };
}

/** The reason for a host whose endpoints are there but not ready. */
const REASONS: Record<Exclude<EndpointState, "ready">, ExclusionReason> = {
  "not-ready": "local-endpoints-not-ready",
  "terminating": "local-endpoints-terminating",
};

/**
 * The Nodes whose Ready condition is present and not True. A Node without a Ready condition, or
 * not in the list, counts as Ready, so a cluster that is still coming up is not cut off.
 */
function readNotReadyNodes(nodes: readonly unknown[]): Set<string> {
  const notReady = new Set<string>();
  for (const node of nodes.slice(0, MAX_NODES)) {
    if (!isRecord(node)) continue;
    if (node.kind !== undefined && node.kind !== "Node") continue;
    if (!isRecord(node.metadata) || !isObjectName(node.metadata.name)) continue;
    if (!countsReady(node)) notReady.add(node.metadata.name);
  }
  return notReady;
}

function exclusion(host: string, reason: ExclusionReason): ExcludedHost {
  return { host, reason, message: MESSAGES[reason](host) };
}

const MESSAGES: Record<ExclusionReason, (host: string) => string> = {
  "node-not-ready": (host) => `Node "${host}" is not Ready`,
  "no-local-endpoint": (host) =>
    `externalTrafficPolicy is Local and no endpoint of the Service runs on "${host}"`,
  "local-endpoints-not-ready": (host) =>
    `externalTrafficPolicy is Local and the Service's endpoints on "${host}" are not ready`,
  "local-endpoints-terminating": (host) =>
    `externalTrafficPolicy is Local and the Service's endpoints on "${host}" are terminating`,
};

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
