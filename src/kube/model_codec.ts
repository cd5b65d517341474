/**
 * The one object representation of Keelson: client-node's model classes, exactly what the
 * generated API (CoreV1Api ...) returns — `Date` objects for date-time fields, quantities as
 * strings, MicroTime fields as strings. Raw JSON from list and watch is converted with
 * client-node's own `ObjectSerializer`, so an object from an informer cache can be sent back
 * through `CoreV1Api.replaceNode` and round-trips like one read with `readNode`.
 *
 * `ObjectSerializer` is not a top-level export of client-node 2.0.1, but the package has no
 * "exports" map, so its module path is importable (and is the same module instance the API uses).
 *
 * @module
 */
import { ObjectSerializer } from "@kubernetes/client-node/dist/gen/models/ObjectSerializer.js";

/**
 * Converts plain JSON (as sent by the API server) into a client-node model instance.
 * @param raw the JSON object
 * @param modelType client-node model name, e.g. `V1Node`
 * @returns the model (unknown model names return `raw` unchanged)
 */
export function toModel<T>(raw: unknown, modelType: string): T {
  return ObjectSerializer.deserialize(raw, modelType, "") as T;
}

/**
 * Converts a model instance back to the JSON the API server expects.
 * @param model the object
 * @param modelType client-node model name, e.g. `V1Node`
 * @returns plain JSON
 */
export function toJson(model: unknown, modelType: string): unknown {
  return ObjectSerializer.serialize(model, modelType, "");
}

/**
 * The client-node model name of a kind in an API group version.
 * @param kind e.g. `Node`
 * @param apiVersion e.g. `v1`, `coordination.k8s.io/v1`, `discovery.k8s.io/v1`
 * @returns e.g. `V1Node`, `V1Lease`
 */
export function modelTypeFor(kind: string, apiVersion = "v1"): string {
  const version = apiVersion.includes("/") ? apiVersion.split("/")[1] ?? "" : apiVersion;
  const prefix = version.charAt(0).toUpperCase() + version.slice(1);
  // core/v1 Event is generated as CoreV1Event (events.k8s.io/v1 as EventsV1Event)
  if (kind === "Event") return apiVersion === "v1" ? "CoreV1Event" : "EventsV1Event";
  return `${prefix}${kind}`;
}
