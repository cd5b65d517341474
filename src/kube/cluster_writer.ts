/**
 * The real `ClusterWriter` (ports.ts) and the core/v1 Event sink of the event recorder, over the
 * plain-JSON REST calls of `rest_api.ts`. Each patch carries the Content-Type of its `PatchType`;
 * every API error is a `KubeApiError`.
 *
 * @module
 */
import type { CoreV1Event, V1Node, V1PersistentVolume, V1Service } from "@kubernetes/client-node";
import type { KubeClient } from "./kube_client.ts";
import type { ClusterWriter } from "./ports.ts";
import { objectPath } from "./rest_api.ts";

export { PATCH_CONTENT_TYPES } from "./rest_api.ts";

/** Writes core/v1 Events (what the event recorder needs). */
export interface CoreEventSink {
  /** POST an Event. */
  create(namespace: string, event: CoreV1Event): Promise<CoreV1Event>;
  /** PATCH an Event (strategic merge, like client-go's recorder: count, lastTimestamp, series). */
  patch(namespace: string, name: string, patch: unknown): Promise<CoreV1Event>;
}

const nodePath = (name: string, subresource?: string) =>
  objectPath({ resource: "nodes", name, ...(subresource ? { subresource } : {}) });
const servicePath = (namespace: string, name: string, subresource?: string) =>
  objectPath({ resource: "services", namespace, name, ...(subresource ? { subresource } : {}) });

/**
 * The ClusterWriter controllers use.
 * @param client the Kubernetes client (a controller's own, for its own rate limit)
 * @returns the writer; every method throws `KubeApiError` on failure
 */
export function createClusterWriter(client: Pick<KubeClient, "rest">): ClusterWriter {
  const rest = client.rest;
  return {
    replaceNode: (node) => {
      const name = node.metadata?.name ?? "";
      return rest.replace<V1Node>(nodePath(name), node, `replace node "${name}"`);
    },
    patchNode: (name, patch, type) =>
      rest.patch<V1Node>(nodePath(name), patch, type, `patch node "${name}"`),
    patchNodeStatus: (name, patch, type) =>
      rest.patch<V1Node>(
        nodePath(name, "status"),
        patch,
        type,
        `patch the status of node "${name}"`,
      ),
    deleteNode: (name) => rest.delete(nodePath(name), `delete node "${name}"`),
    patchServiceStatus: (namespace, name, patch, type) =>
      rest.patch<V1Service>(
        servicePath(namespace, name, "status"),
        patch,
        type,
        `patch the status of service "${namespace}/${name}"`,
      ),
    patchPersistentVolume: (name, patch, type) =>
      rest.patch<V1PersistentVolume>(
        objectPath({ resource: "persistentvolumes", name }),
        patch,
        type,
        `patch persistent volume "${name}"`,
      ),
  };
}

/**
 * The Event sink of the event recorder (core/v1 Events, as upstream CCMs write them).
 * @param client the Kubernetes client (the controller's own: events share its rate limit)
 * @returns the sink; methods throw `KubeApiError` on failure
 */
export function createEventSink(client: Pick<KubeClient, "rest">): CoreEventSink {
  const rest = client.rest;
  return {
    create: (namespace, event) =>
      rest.create<CoreV1Event>(
        objectPath({ resource: "events", namespace }),
        event,
        `create event in namespace "${namespace}"`,
      ),
    patch: (namespace, name, patch) =>
      rest.patch<CoreV1Event>(
        objectPath({ resource: "events", namespace, name }),
        patch,
        "strategic",
        `patch event "${namespace}/${name}"`,
      ),
  };
}
