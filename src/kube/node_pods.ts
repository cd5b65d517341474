/**
 * The Pods bound to one Node, read when needed and never cached: a list with the field selector
 * `spec.nodeName=<node>`, page by page through the one REST client (each page within the bounded
 * reader's cap), each Pod cut on arrival to the few fields a decision reads, so a Node's worth of
 * Pods costs a few hundred bytes each and no Pod informer runs. And the one write on a Pod
 * Keelson makes: a force delete (grace period 0) that applies only to the Pod with the uid that
 * was read (a precondition), so a Pod created again under the same name is never touched.
 *
 * @module
 */
import { LIST_PAGE_SIZE } from "./bounded_body.ts";
import type { KubeClient } from "./kube_client.ts";
import { pageThrough } from "./list_pages.ts";
import { objectPath } from "./rest_api.ts";

/** What is kept of one Pod bound to a Node. Every field as the server sent it, untrusted. */
export interface NodePod {
  namespace: string;
  name: string;
  uid: string;
  /** `spec.nodeName`: checked again by the reader, not only trusted to the field selector. */
  nodeName: string;
  /** `metadata.deletionTimestamp` when set (the Pod is terminating). */
  deletionTimestamp?: string;
}

/** The reads and the one write on the Pods of a Node. */
export interface NodePods {
  /**
   * Every Pod bound to `node`.
   * @param node the Node's name
   * @param signal aborts the list
   * @returns the Pods, cut to `NodePod`; a Pod missing a name, namespace or uid is left out
   * @throws {KubeApiError} on an API or network error; {Error} above the item bound
   */
  list(node: string, signal?: AbortSignal): Promise<NodePod[]>;
  /**
   * Deletes a Pod at once (gracePeriodSeconds 0), only if it is still the one with `pod.uid`.
   * @param pod the Pod as listed
   * @throws {KubeApiError} on an API error (404 when gone, 409 when the uid no longer matches)
   */
  forceDelete(pod: NodePod): Promise<void>;
}

/**
 * More Pods than this on one Node is not believed (kubelet's default is 110, and clusters raise
 * it to a few hundred): the list fails instead of growing without a bound.
 */
export const MAX_PODS_PER_NODE = 5_000;

/** Longer strings are not kept (names are at most 253, uids 36, times about 20). */
const MAX_KEPT_STRING = 256;

function text(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" && value.length <= MAX_KEPT_STRING
    ? value
    : undefined;
}

function record(value: unknown): Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? value as Record<string, unknown>
    : {};
}

/**
 * What is kept of one listed Pod: a new object with only the fields read, each a bounded string.
 * @param raw a decoded Pod
 * @returns the Pod, or undefined when it lacks a name, namespace, uid or node name
 */
export function trimNodePod(raw: unknown): NodePod | undefined {
  const metadata = record(record(raw).metadata);
  const spec = record(record(raw).spec);
  const namespace = text(metadata.namespace);
  const name = text(metadata.name);
  const uid = text(metadata.uid);
  const nodeName = text(spec.nodeName);
  if (!namespace || !name || !uid || !nodeName) return undefined;
  const deletionTimestamp = text(metadata.deletionTimestamp);
  return {
    namespace,
    name,
    uid,
    nodeName,
    ...(deletionTimestamp === undefined ? {} : { deletionTimestamp }),
  };
}

/**
 * The Pods of Nodes over a client (a controller's own, for its own rate limit).
 * @param client the Kubernetes client
 * @returns the port
 */
export function createNodePods(client: Pick<KubeClient, "rest">): NodePods {
  const rest = client.rest;
  const collection = objectPath({ resource: "pods" });
  return {
    async list(node, signal) {
      const { items } = await pageThrough(
        async (continueToken, limit) => {
          const page = await rest.listPage(collection, {
            limit,
            fieldSelector: `spec.nodeName=${node}`,
            ...(continueToken ? { continueToken } : {}),
            ...(signal ? { signal } : {}),
          });
          // cut each page at once: only the small records outlive it
          const kept = page.items.map(trimNodePod).filter((p) => p !== undefined);
          return { items: kept, continueToken: page.continueToken };
        },
        `list the pods of node "${node}"`,
        { pageSize: LIST_PAGE_SIZE, maxItems: MAX_PODS_PER_NODE, ...(signal ? { signal } : {}) },
      );
      return items as NodePod[];
    },
    async forceDelete(pod) {
      await rest.delete(
        objectPath({ resource: "pods", namespace: pod.namespace, name: pod.name }),
        `force-delete pod "${pod.namespace}/${pod.name}"`,
        {
          body: {
            apiVersion: "v1",
            kind: "DeleteOptions",
            gracePeriodSeconds: 0,
            preconditions: { uid: pod.uid },
          },
        },
      );
    },
  };
}
