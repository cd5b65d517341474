/**
 * The typed REST calls Keelson makes (read, create, replace, patch, delete one object), as plain
 * JSON over the project's own transport (`http_transport.ts`).
 *
 * Why not client-node's generated APIs: only its types are used (`import type`, erased). Its
 * runtime (CoreV1Api, ObjectSerializer, undici, openid-client ...) costs a Deno process about
 * 85 MB of RSS and 0.3–0.9 s of start-up, for calls that are one `fetch` each. Plain JSON also
 * keeps every field the server sent: an object read and PUT back no longer loses the fields newer
 * than client-node's models.
 *
 * The objects are exactly the server's JSON. client-node's types declare date-time fields
 * (`creationTimestamp`, `lastTransitionTime` ...) as `Date`, but here they are RFC 3339 strings:
 * read them with `Date.parse` / `new Date(value)`, never with `Date` methods. A `Date` written
 * into an object is sent as its `toISOString()`.
 *
 * @module
 */
import { errorMessageWithCause } from "../log/error_message.ts";
import { isAbortError, statusError } from "./api_error.ts";
import type { HttpTransport } from "./http_transport.ts";
import { KubeApiError, type PatchType } from "./ports.ts";

/** The Content-Type of each patch flavour. */
export const PATCH_CONTENT_TYPES: Record<PatchType, string> = {
  merge: "application/merge-patch+json",
  strategic: "application/strategic-merge-patch+json",
  json: "application/json-patch+json",
};

/** Per-call options. */
export interface RestCallOptions {
  /** Aborts the call (the abort error is thrown unchanged). */
  signal?: AbortSignal;
}

/**
 * One object's REST calls. `path` is the object's (or, for `create`, its collection's) path, e.g.
 * `/api/v1/nodes/n1` (see `objectPath`); `what` names the attempt for error messages, e.g.
 * `patch node "n1"`. Every method throws `KubeApiError` on an HTTP error (its status code and
 * Status reason) or a network error (code 0).
 */
export interface RestApi {
  /**
   * GET an object.
   * @returns the object
   */
  get<T>(path: string, what: string, options?: RestCallOptions): Promise<T>;
  /**
   * POST an object to a collection.
   * @returns the created object
   */
  create<T>(path: string, body: T, what: string, options?: RestCallOptions): Promise<T>;
  /**
   * PUT a whole object (optimistic concurrency through its `metadata.resourceVersion`).
   * @returns the stored object
   */
  replace<T>(path: string, body: T, what: string, options?: RestCallOptions): Promise<T>;
  /**
   * PATCH an object with the Content-Type of `type`.
   * @returns the patched object
   */
  patch<T>(
    path: string,
    patch: unknown,
    type: PatchType,
    what: string,
    options?: RestCallOptions,
  ): Promise<T>;
  /** DELETE an object. */
  delete(path: string, what: string, options?: RestCallOptions): Promise<void>;
}

/** Where one object (or collection) lives in the API. */
export interface ObjectLocation {
  /** API group; empty for the core group. @default "" */
  group?: string;
  /** API version. @default "v1" */
  version?: string;
  /** Plural resource name, e.g. `nodes`, `services`, `leases`. */
  resource: string;
  /** Namespace of a namespaced resource. */
  namespace?: string;
  /** Object name; absent for a collection. */
  name?: string;
  /** Subresource, e.g. `status`. */
  subresource?: string;
}

/**
 * The URL path of an object, a subresource or a collection; names are percent-encoded.
 * @param location group, version, resource, namespace, name, subresource
 * @returns e.g. `/api/v1/namespaces/default/services/web/status`
 */
export function objectPath(location: ObjectLocation): string {
  const version = location.version ?? "v1";
  const parts = [location.group ? `/apis/${location.group}/${version}` : `/api/${version}`];
  if (location.namespace !== undefined) {
    parts.push("namespaces", encodeURIComponent(location.namespace));
  }
  parts.push(location.resource);
  if (location.name !== undefined) parts.push(encodeURIComponent(location.name));
  if (location.subresource) parts.push(location.subresource);
  return parts.join("/");
}

/**
 * Builds the REST calls over a transport. One per client (the transport carries that client's
 * rate limit), so each controller can have its own.
 * @param transport the transport (only `fetch` is used)
 * @returns the calls
 */
export function createRestApi(transport: Pick<HttpTransport, "fetch">): RestApi {
  async function call<T>(
    method: string,
    path: string,
    what: string,
    body: unknown,
    contentType: string | undefined,
    options: RestCallOptions | undefined,
  ): Promise<T> {
    const signal = options?.signal;
    let response: Response;
    try {
      response = await transport.fetch(path, {
        method,
        headers: contentType ? { "content-type": contentType } : {},
        body: body === undefined ? null : JSON.stringify(body),
        signal: signal ?? null,
      });
    } catch (error) {
      if (isAbortError(error) || signal?.aborted) throw error;
      throw new KubeApiError(`Cannot ${what}: ${errorMessageWithCause(error)}`, {
        code: 0,
        cause: error,
      });
    }
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      if (isAbortError(error) || signal?.aborted) throw error;
      throw new KubeApiError(`Cannot ${what}: ${errorMessageWithCause(error)}`, {
        code: 0,
        cause: error,
      });
    }
    if (response.status < 200 || response.status > 299) {
      throw statusError(response.status, text, response.headers.get("retry-after"), what);
    }
    if (text === "") return undefined as T;
    try {
      return JSON.parse(text) as T;
    } catch (error) {
      throw new KubeApiError(
        `Cannot ${what}: the API server answered HTTP ${response.status} with a body that is not JSON`,
        { code: response.status, cause: error },
      );
    }
  }
  const json = "application/json";
  return {
    get: (path, what, options) => call(`GET`, path, what, undefined, undefined, options),
    create: (path, body, what, options) => call("POST", path, what, body, json, options),
    replace: (path, body, what, options) => call("PUT", path, what, body, json, options),
    patch: (path, patch, type, what, options) =>
      call("PATCH", path, what, patch, PATCH_CONTENT_TYPES[type], options),
    delete: async (path, what, options) => {
      await call("DELETE", path, what, undefined, undefined, options);
    },
  };
}
