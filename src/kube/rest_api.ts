/**
 * The one REST client of Keelson: the calls it makes (read, create, replace, patch, delete one
 * object; one page of a list), as plain JSON over the project's own transport
 * (`http_transport.ts`), through one request, error and JSON path. Every body is read by the
 * transport through the bounded reader (`bounded_body.ts`), within the cap this client names: an
 * object up to `BODY_LIMITS.object`, a list page up to `BODY_LIMITS.listPage`; a list page's items of another kind or version than the collection's
 * are left out and counted (`list_items.ts`). The read-only client (`read_only_client.ts`) is a
 * view of this one.
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
import { BODY_LIMITS, RESPONSE_TOO_LARGE, ResponseTooLargeError } from "./bounded_body.ts";
import type { HttpTransport } from "./http_transport.ts";
import { collectionKindOf, itemsOfCollection } from "./list_items.ts";
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

/** Options of `RestApi.delete`. */
export interface DeleteCallOptions extends RestCallOptions {
  /** The `DeleteOptions` sent as the body. @default none */
  body?: Record<string, unknown>;
}

/** Options of `RestApi.listPage`. */
export interface ListPageOptions {
  /** The page size (`limit`). */
  limit: number;
  /** The `continue` token from the previous page. */
  continueToken?: string;
  /** A field selector (`fieldSelector`), e.g. `spec.nodeName=w-1`. */
  fieldSelector?: string;
  /** Aborts the request. */
  signal?: AbortSignal;
}

/** One page of a list. */
export interface ListPage {
  /** The page's items of the collection's kind and version, plain JSON, untrusted. */
  items: unknown[];
  /** The token of the next page; undefined on the last page. */
  continueToken: string | undefined;
  /** The list's resourceVersion (empty when the server sent none). */
  resourceVersion: string;
  /** Items left out: their kind or apiVersion is not the collection's. */
  ignored: number;
}

/**
 * One object's REST calls, and one page of a list. `path` is the object's (or, for `create`, its collection's) path, e.g.
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
  /** DELETE an object; `options.body` is its `DeleteOptions` (grace period, preconditions). */
  delete(path: string, what: string, options?: DeleteCallOptions): Promise<void>;
  /**
   * GETs one page of a collection (its body up to `BODY_LIMITS.listPage`).
   * @param path the collection, e.g. `/api/v1/nodes`
   * @param options page size, continue token, signal
   * @returns the page
   * @throws {KubeApiError} on an HTTP error (410 Gone: the continue token expired), a network
   *   error or a body past its cap (code 0), an answer that is not a list; the signal's reason on
   *   abort
   */
  listPage(path: string, options: ListPageOptions): Promise<ListPage>;
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
  /** The body of a 2xx answer, parsed (undefined when empty). */
  async function call(
    method: string,
    path: string,
    what: string,
    body: unknown,
    contentType: string | undefined,
    options: RestCallOptions | undefined,
    list = false,
  ): Promise<unknown> {
    const signal = options?.signal;
    const cap = list ? BODY_LIMITS.listPage : BODY_LIMITS.object;
    const bodyName = list ? "one list page" : "one object";
    let status: number, text: string, retryAfter: string | null;
    try {
      const response = await transport.fetch(path, {
        ...(method === "GET" ? {} : { method }),
        headers: contentType ? { "content-type": contentType } : {},
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: signal ?? null,
        maxBodyBytes: cap,
        bodyName,
      });
      status = response.status;
      retryAfter = response.headers.get("retry-after");
      // already in memory: the transport read it within `maxBodyBytes` (or cut an error body)
      text = await response.text();
    } catch (error) {
      if (isAbortError(error) || signal?.aborted) throw error;
      throw new KubeApiError(`Cannot ${what}: ${errorMessageWithCause(error)}`, {
        code: 0,
        ...(error instanceof ResponseTooLargeError ? { reason: RESPONSE_TOO_LARGE } : {}),
        cause: error,
      });
    }
    if (status < 200 || status > 299) throw statusError(status, text, retryAfter, what);
    if (text === "") return undefined;
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new KubeApiError(
        `Cannot ${what}: the API server answered HTTP ${status} with a body that is not JSON`,
        { code: status, cause: error },
      );
    }
  }

  async function listPage(path: string, options: ListPageOptions): Promise<ListPage> {
    const query = new URLSearchParams({ limit: String(options.limit) });
    if (options.continueToken) query.set("continue", options.continueToken);
    if (options.fieldSelector) query.set("fieldSelector", options.fieldSelector);
    const what = `list ${path}`;
    const list = await call("GET", `${path}?${query}`, what, undefined, undefined, options, true);
    const body = isRecord(list) ? list : {};
    const raw = body.items ?? [];
    if (!Array.isArray(raw)) {
      throw new KubeApiError(`Cannot ${what}: the answer's items is not a list`, { code: 200 });
    }
    const { items, ignored } = itemsOfCollection(
      { kind: body.kind, apiVersion: body.apiVersion, items: raw },
      collectionKindOf(path),
    );
    const metadata = isRecord(body.metadata) ? body.metadata : {};
    const next = metadata.continue;
    const version = metadata.resourceVersion;
    return {
      items,
      continueToken: typeof next === "string" && next !== "" ? next : undefined,
      resourceVersion: typeof version === "string" ? version : "",
      ignored,
    };
  }

  const json = "application/json";
  // the server's JSON, as the caller's type (the objects are untrusted; callers validate)
  const typed = <T>(value: Promise<unknown>) => value as Promise<T>;
  return {
    get: (path, what, options) => typed(call("GET", path, what, undefined, undefined, options)),
    create: (path, body, what, options) => typed(call("POST", path, what, body, json, options)),
    replace: (path, body, what, options) => typed(call("PUT", path, what, body, json, options)),
    patch: (path, patch, type, what, options) =>
      typed(call("PATCH", path, what, patch, PATCH_CONTENT_TYPES[type], options)),
    delete: async (path, what, options) => {
      const body = options?.body;
      await call("DELETE", path, what, body, body === undefined ? undefined : json, options);
    },
    listPage,
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
