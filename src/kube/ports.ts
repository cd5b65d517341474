/**
 * The ports controllers use to reach the cluster. The real implementations live beside this file
 * (informer.ts, cluster_writer.ts, event_recorder.ts); `tests/unit/_fakes/` has in-memory ones.
 *
 * @module
 */
import type {
  CoreV1Event,
  V1Node,
  V1ObjectReference,
  V1PersistentVolume,
  V1Service,
} from "@kubernetes/client-node";

/** A read-only view of a cache, keyed `name` (cluster-scoped) or `namespace/name`. */
export interface Lister<T> {
  /** The cached object, or undefined. */
  get(key: string): T | undefined;
  /** Every cached object (a snapshot; mutate copies only). */
  list(): T[];
}

/** One change seen by an informer. `old` is set on update and delete. */
export interface InformerEvent<T> {
  type: "add" | "update" | "delete";
  object: T;
  old?: T;
}

/** A watched cache of one resource kind. */
export interface Informer<T> extends Lister<T> {
  /** True once the first full list has been loaded. */
  hasSynced(): boolean;
  /** Calls `handler` for every change (and every object again on resync). Returns an unsubscribe. */
  subscribe(handler: (event: InformerEvent<T>) => void): () => void;
  /** Resolves true when synced, false when `signal` aborts first. */
  waitForSync(signal: AbortSignal): Promise<boolean>;
}

/** The key of an object in a Lister: `name` or `namespace/name`. */
export function objectKey(object: { metadata?: { name?: string; namespace?: string } }): string {
  const name = object.metadata?.name ?? "";
  const namespace = object.metadata?.namespace;
  return namespace ? `${namespace}/${name}` : name;
}

/** Patch flavours the API server accepts. */
export type PatchType = "merge" | "strategic" | "json";

/** Writes controllers make to the API. Every method throws `KubeApiError` on an API error. */
export interface ClusterWriter {
  /** PUT a whole Node (optimistic concurrency via its resourceVersion). */
  replaceNode(node: V1Node): Promise<V1Node>;
  /** PATCH a Node's metadata/spec. */
  patchNode(name: string, patch: unknown, type: PatchType): Promise<V1Node>;
  /** PATCH a Node's status subresource. */
  patchNodeStatus(name: string, patch: unknown, type: PatchType): Promise<V1Node>;
  /** DELETE a Node. */
  deleteNode(name: string): Promise<void>;
  /**
   * PATCH a Service's status subresource: status, finalizer and annotations in one request (the
   * Service status strategy keeps metadata changes; upstream writes its finalizer this way too).
   * Keelson never changes a Service's spec.
   */
  patchServiceStatus(
    namespace: string,
    name: string,
    patch: unknown,
    type: PatchType,
  ): Promise<V1Service>;
  /** PATCH a PersistentVolume's metadata. */
  patchPersistentVolume(name: string, patch: unknown, type: PatchType): Promise<V1PersistentVolume>;
}

/** Records Kubernetes Events; repeats of one (object, type, reason, message) are aggregated. */
export interface EventRecorder {
  /**
   * Records one event on `object`.
   * @param object the involved object (Node, Service, ...)
   * @param type `Normal` or `Warning`
   * @param reason CamelCase reason, e.g. `Synced`
   * @param message what happened, quoting the values
   */
  event(
    object: EventTarget,
    type: "Normal" | "Warning",
    reason: string,
    message: string,
  ): void;
}

/** The part of an object an event needs. */
export type EventTarget = V1ObjectReference | {
  kind: string;
  apiVersion?: string;
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string };
};

/** An event as recorded (what fakes keep and tests assert on). */
export type RecordedEvent = Pick<CoreV1Event, "type" | "reason" | "message"> & {
  object: string;
};

/** An error answered by the API server, with its HTTP status and Status reason. */
export class KubeApiError extends Error {
  /** HTTP status code (0 when the request never got an answer). */
  readonly code: number;
  /** `Status.reason`, e.g. `Conflict`, `NotFound`, when the server sent one. */
  readonly reason: string;
  /** Seconds the server asked us to wait (`Retry-After`), when given. */
  readonly retryAfterSeconds: number | undefined;
  /**
   * @param message the server's message, prefixed with what was attempted
   * @param options the status code, reason, retry-after and cause
   */
  constructor(
    message: string,
    options: { code: number; reason?: string; retryAfterSeconds?: number; cause?: unknown },
  ) {
    super(message, { cause: options.cause });
    this.name = "KubeApiError";
    this.code = options.code;
    this.reason = options.reason ?? "";
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/** True for a 409 Conflict. */
export function isConflict(error: unknown): boolean {
  return error instanceof KubeApiError && error.code === 409;
}

/** Awaits a write, treating 404 Not Found as done (the object is already gone). */
export async function ignoreNotFound(write: Promise<unknown>): Promise<void> {
  try {
    await write;
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}

/** True for a 404 Not Found. */
export function isNotFound(error: unknown): boolean {
  return error instanceof KubeApiError && error.code === 404;
}
