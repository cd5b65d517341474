/**
 * The real `ClusterWriter` (ports.ts) and the core/v1 Event sink of the event recorder, over
 * client-node's CoreV1Api. client-node 2.x sends every PATCH as JSON Patch unless told otherwise,
 * so each patch call sets its Content-Type from the `PatchType`. Every API error becomes a
 * `KubeApiError`.
 *
 * @module
 */
import {
  type ConfigurationOptions,
  type CoreV1Event,
  type ObservableMiddleware,
  PatchStrategy,
  setHeaderOptions,
  type V1Node,
} from "@kubernetes/client-node";
import { toKubeApiError } from "./api_error.ts";
import type { KubeClient } from "./kube_client.ts";
import type { ClusterWriter, PatchType } from "./ports.ts";

/** The Content-Type of each patch flavour. */
export const PATCH_CONTENT_TYPES: Record<PatchType, string> = {
  merge: PatchStrategy.MergePatch,
  strategic: PatchStrategy.StrategicMergePatch,
  json: PatchStrategy.JsonPatch,
};

/** Writes core/v1 Events (what the event recorder needs). */
export interface CoreEventSink {
  /** POST an Event. */
  create(namespace: string, event: CoreV1Event): Promise<CoreV1Event>;
  /** PATCH an Event (strategic merge, like client-go's recorder: count, lastTimestamp, series). */
  patch(namespace: string, name: string, patch: unknown): Promise<CoreV1Event>;
}

/**
 * Per-call options that set the patch Content-Type (appended to the default middleware).
 * @param type the patch flavour
 * @returns options for a generated `patch*` call
 */
export function patchOptions(type: PatchType): ConfigurationOptions<ObservableMiddleware> {
  return setHeaderOptions("Content-Type", PATCH_CONTENT_TYPES[type]);
}

/**
 * The ClusterWriter controllers use.
 * @param client the Kubernetes client
 * @returns the writer; every method throws `KubeApiError` on failure
 */
export function createClusterWriter(client: Pick<KubeClient, "core">): ClusterWriter {
  const core = client.core;
  return {
    replaceNode: (node: V1Node) =>
      call(
        `replace node "${node.metadata?.name ?? ""}"`,
        () => core.replaceNode({ name: node.metadata?.name ?? "", body: node }),
      ),
    patchNode: (name, patch, type) =>
      call(
        `patch node "${name}"`,
        () => core.patchNode({ name, body: patch as object }, patchOptions(type)),
      ),
    patchNodeStatus: (name, patch, type) =>
      call(
        `patch the status of node "${name}"`,
        () => core.patchNodeStatus({ name, body: patch as object }, patchOptions(type)),
      ),
    deleteNode: (name) =>
      call(`delete node "${name}"`, async () => {
        await core.deleteNode({ name });
      }),
    patchServiceStatus: (namespace, name, patch, type) =>
      call(
        `patch the status of service "${namespace}/${name}"`,
        () =>
          core.patchNamespacedServiceStatus(
            { name, namespace, body: patch as object },
            patchOptions(type),
          ),
      ),
    patchPersistentVolume: (name, patch, type) =>
      call(
        `patch persistent volume "${name}"`,
        () => core.patchPersistentVolume({ name, body: patch as object }, patchOptions(type)),
      ),
  };
}

/**
 * The Event sink of the event recorder (core/v1 Events, as upstream CCMs write them).
 * @param client the Kubernetes client
 * @returns the sink; methods throw `KubeApiError` on failure
 */
export function createEventSink(client: Pick<KubeClient, "core">): CoreEventSink {
  const core = client.core;
  return {
    create: (namespace, event) =>
      call(
        `create event in namespace "${namespace}"`,
        () => core.createNamespacedEvent({ namespace, body: event }),
      ),
    patch: (namespace, name, patch) =>
      call(
        `patch event "${namespace}/${name}"`,
        () =>
          core.patchNamespacedEvent(
            { name, namespace, body: patch as object },
            patchOptions("strategic"),
          ),
      ),
  };
}

async function call<T>(what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw toKubeApiError(error, what);
  }
}
