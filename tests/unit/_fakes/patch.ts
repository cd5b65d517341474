/**
 * Patch application for the fake cluster: JSON merge patch (RFC 7386), the subset of strategic
 * merge patch our controllers use (merge keys for `conditions`/`addresses`, set semantics for
 * `finalizers`, `$patch: replace|delete`, `$setElementOrder`, `$deleteFromPrimitiveList`), and
 * JSON patch (RFC 6902: add, remove, replace, test).
 *
 * @module
 */
import { KubeApiError, type PatchType } from "../../../src/kube/ports.ts";

type Json = unknown;
type JsonObject = Record<string, unknown>;

/**
 * Lists of objects merged by key under a strategic merge patch (as the Kubernetes types declare);
 * other lists, such as `status.loadBalancer.ingress` (atomic), are replaced.
 */
const MERGE_KEYS: Record<string, string> = {
  conditions: "type",
  addresses: "type",
  ports: "port",
};
/** Primitive lists with set ("merge") semantics under a strategic merge patch. */
const SET_LISTS = new Set(["finalizers"]);

function isObject(value: Json): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Applies `patch` to `target` (not mutated) and returns the result.
 * @throws {KubeApiError} 422 when a JSON patch operation fails
 */
export function applyPatch(target: Json, patch: Json, type: PatchType): Json {
  switch (type) {
    case "merge":
      return mergePatch(structuredClone(target), patch);
    case "strategic":
      return strategicPatch(structuredClone(target), patch);
    case "json":
      return jsonPatch(structuredClone(target), patch as JsonPatchOp[]);
  }
}

/** RFC 7386 JSON merge patch. */
export function mergePatch(target: Json, patch: Json): Json {
  if (!isObject(patch)) return structuredClone(patch);
  const result: JsonObject = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

function strategicPatch(target: Json, patch: Json, field = ""): Json {
  if (!isObject(patch)) return structuredClone(patch);
  if (patch["$patch"] === "replace") {
    const { $patch: _ignored, ...rest } = patch;
    return structuredClone(rest);
  }
  if (patch["$patch"] === "delete") return undefined;
  const result: JsonObject = isObject(target) ? { ...target } : {};
  const orders: Record<string, Json[]> = {};
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith("$setElementOrder/")) {
      orders[key.slice("$setElementOrder/".length)] = value as Json[];
      continue;
    }
    if (key.startsWith("$deleteFromPrimitiveList/")) {
      const list = key.slice("$deleteFromPrimitiveList/".length);
      const remove = new Set(value as Json[]);
      result[list] = ((result[list] as Json[] | undefined) ?? []).filter((v) => !remove.has(v));
      continue;
    }
    if (key === "$retainKeys" || key === "$patch") continue;
    if (value === null) {
      delete result[key];
    } else if (Array.isArray(value)) {
      result[key] = strategicList(result[key], value, key);
    } else {
      result[key] = strategicPatch(result[key], value, key);
    }
  }
  for (const [list, order] of Object.entries(orders)) {
    result[list] = orderList(result[list] as Json[] | undefined, order, list);
  }
  void field;
  return result;
}

function strategicList(current: Json, patch: Json[], field: string): Json[] {
  const existing = Array.isArray(current) ? [...current] : [];
  if (SET_LISTS.has(field)) {
    for (const item of patch) if (!existing.includes(item)) existing.push(item);
    return existing;
  }
  const mergeKey = MERGE_KEYS[field];
  if (!mergeKey) return structuredClone(patch);
  const replaceAll = patch.find((item) => isObject(item) && item["$patch"] === "replace");
  if (replaceAll) return patch.filter((item) => item !== replaceAll).map((i) => structuredClone(i));
  for (const item of patch) {
    if (!isObject(item)) continue;
    const index = existing.findIndex((e) => isObject(e) && e[mergeKey] === item[mergeKey]);
    if (item["$patch"] === "delete") {
      if (index >= 0) existing.splice(index, 1);
    } else if (index >= 0) {
      existing[index] = strategicPatch(existing[index], item);
    } else {
      existing.push(structuredClone(item));
    }
  }
  return existing;
}

function orderList(list: Json[] | undefined, order: Json[], field: string): Json[] {
  if (!list) return [];
  const mergeKey = MERGE_KEYS[field];
  const keyOf = (item: Json): Json => (mergeKey && isObject(item) ? item[mergeKey] : item);
  const rank = (item: Json): number => {
    const position = order.findIndex((o) => keyOf(o) === keyOf(item));
    return position < 0 ? order.length : position;
  };
  return [...list].sort((a, b) => rank(a) - rank(b));
}

/** One RFC 6902 operation (the ones we use). */
export interface JsonPatchOp {
  op: "add" | "remove" | "replace" | "test";
  path: string;
  value?: Json;
}

function jsonPatch(target: Json, ops: JsonPatchOp[]): Json {
  let document = target;
  for (const op of ops) document = applyOp(document, op);
  return document;
}

function invalid(message: string): KubeApiError {
  return new KubeApiError(message, { code: 422, reason: "Invalid" });
}

function applyOp(document: Json, op: JsonPatchOp): Json {
  const parts = op.path.split("/").slice(1).map((p) =>
    p.replaceAll("~1", "/").replaceAll("~0", "~")
  );
  if (parts.length === 0) return op.op === "remove" ? undefined : structuredClone(op.value);
  let parent: Json = document;
  for (const part of parts.slice(0, -1)) {
    if (Array.isArray(parent)) parent = parent[Number(part)];
    else if (isObject(parent)) parent = parent[part];
    else throw invalid(`json patch path ${op.path} does not exist`);
  }
  const last = parts[parts.length - 1] as string;
  if (Array.isArray(parent)) {
    const index = last === "-" ? parent.length : Number(last);
    if (op.op === "add") parent.splice(index, 0, structuredClone(op.value));
    else if (index >= parent.length) throw invalid(`json patch path ${op.path} does not exist`);
    else if (op.op === "remove") parent.splice(index, 1);
    else if (op.op === "replace") parent[index] = structuredClone(op.value);
    else if (JSON.stringify(parent[index]) !== JSON.stringify(op.value)) {
      throw invalid(`json patch test failed at ${op.path}`);
    }
  } else if (isObject(parent)) {
    if (op.op !== "add" && !(last in parent)) {
      throw invalid(`json patch path ${op.path} does not exist`);
    }
    if (op.op === "remove") delete parent[last];
    else if (op.op === "test") {
      if (JSON.stringify(parent[last]) !== JSON.stringify(op.value)) {
        throw invalid(`json patch test failed at ${op.path}`);
      }
    } else parent[last] = structuredClone(op.value);
  } else {
    throw invalid(`json patch path ${op.path} does not exist`);
  }
  return document;
}
