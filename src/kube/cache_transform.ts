/**
 * What an informer keeps of each object it receives, applied once when the object is decoded
 * (client-go's `cache.TransformFunc`; kube-controller-manager and the cloud-controller-manager
 * strip `metadata.managedFields` this way). Objects in a cache live as long as the process, so
 * fields no controller reads are memory spent for nothing: `managedFields` alone is often larger
 * than the rest of the metadata.
 *
 * What is dropped, and why it is safe:
 * - every kind: `metadata.managedFields`. A PUT without it keeps the server's copy (the API server
 *   only replaces managedFields when the request sets them).
 * - Node: `status` except `addresses` and `conditions` (images, nodeInfo, capacity, volumes ...).
 *   Nodes are PUT back from the cache (node initialization), but a PUT of a Node ignores `status`
 *   (the status subresource owns it); status changes go through status PATCHes.
 * - Service, PersistentVolume, EndpointSlice: the `kubectl.kubernetes.io/last-applied-configuration`
 *   annotation (a copy of the whole object as last applied). Keelson only PATCHes these kinds; an
 *   object of these kinds taken from a cache must never be PUT back.
 * - EndpointSlice: `ports` and each endpoint's `targetRef`, `hints`, `zone` and
 *   `deprecatedTopology`; Keelson reads only which Nodes hold ready endpoints.
 *
 * @module
 */

/** Turns a decoded object (plain JSON, owned by the caller) into what the cache keeps. */
export type CacheTransform = (object: unknown) => unknown;

const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function stripMetadata(object: Json, lastApplied: boolean): void {
  const metadata = object.metadata;
  if (!isObject(metadata)) return;
  delete metadata.managedFields;
  if (lastApplied && isObject(metadata.annotations)) {
    delete metadata.annotations[LAST_APPLIED];
  }
}

/**
 * Drops `metadata.managedFields` (in place).
 * @param object a decoded object
 * @returns the same object
 */
export function stripManagedFields(object: unknown): unknown {
  if (isObject(object)) stripMetadata(object, false);
  return object;
}

function transformNode(object: unknown): unknown {
  if (!isObject(object)) return object;
  stripMetadata(object, false);
  const status = object.status;
  if (isObject(status)) {
    object.status = {
      ...(status.addresses !== undefined ? { addresses: status.addresses } : {}),
      ...(status.conditions !== undefined ? { conditions: status.conditions } : {}),
    };
  }
  return object;
}

function transformPatchedOnly(object: unknown): unknown {
  if (isObject(object)) stripMetadata(object, true);
  return object;
}

const ENDPOINT_DROPPED = ["targetRef", "hints", "zone", "deprecatedTopology"];

function transformEndpointSlice(object: unknown): unknown {
  if (!isObject(object)) return object;
  stripMetadata(object, true);
  delete object.ports;
  if (Array.isArray(object.endpoints)) {
    for (const endpoint of object.endpoints) {
      if (!isObject(endpoint)) continue;
      for (const field of ENDPOINT_DROPPED) delete endpoint[field];
    }
  }
  return object;
}

/**
 * The transform for the objects of one kind.
 * @param kind e.g. `Node`, `Service`, `PersistentVolume`, `EndpointSlice`
 * @returns the transform (unknown kinds: `managedFields` only)
 */
export function cacheTransformFor(kind: string): CacheTransform {
  switch (kind) {
    case "Node":
      return transformNode;
    case "Service":
    case "PersistentVolume":
      return transformPatchedOnly;
    case "EndpointSlice":
      return transformEndpointSlice;
    default:
      return stripManagedFields;
  }
}
