/**
 * The Kubernetes client of Keelson: typed REST calls on single objects (`rest_api.ts`) plus a raw
 * paginated `list` and a streaming `watch`, all over one transport (`http_transport.ts`).
 * Everything is plain JSON, the API server's own representation; only client-node's types are
 * used (no client-node code runs).
 *
 * @module
 */
import { listEveryPage } from "./list_pages.ts";
import type { Registry } from "prom-client";
import { LIST_PAGE_SIZE } from "./bounded_body.ts";
import { createHttpTransport, type HttpTransport } from "./http_transport.ts";
import type { ConnectionSettings } from "./kubeconfig.ts";
import { createRestApi, type RestApi } from "./rest_api.ts";
import type { RawWatchEvent } from "./watch_lines.ts";
import { randomWatchTimeoutSeconds, watchEvents, type WatchOptions } from "./watch_events.ts";

export { randomWatchTimeoutSeconds, type WatchOptions };

/** Options for `createKubeClient`. */
export interface KubeClientOptions {
  /** Where the `rest_client_*` metrics go. */
  registry: Registry;
  /** Sustained requests per second. @default 20 */
  qps?: number;
  /** Burst. @default 30 */
  burst?: number;
  /** User-Agent header. @default "keelson" */
  userAgent?: string;
  /** Deadline of every request but watches, in ms; 0 = none. @default 30 000 */
  requestTimeoutMs?: number;
  /** Liveness ping interval in ms; 0 = no pings. @default 5 000 */
  pingIntervalMs?: number;
  /** A ping unanswered this long (ms) replaces the connection. @default 4 000 */
  pingTimeoutMs?: number;
}

/** Options of `KubeClient.list`. */
export interface ListOptions {
  /** Page size. @default LIST_PAGE_SIZE */
  limit?: number;
  /** Aborts the list. */
  signal?: AbortSignal;
}

/** A full list: every item (plain JSON) and the list's resourceVersion. */
export interface ListResult {
  items: unknown[];
  resourceVersion: string;
  /** Items left out: their kind or apiVersion was not the collection's (`list_items.ts`). */
  ignored: number;
}

/** The client every part of Keelson uses to talk to the API server. */
export interface KubeClient {
  /** Where the connection settings came from (for logs). */
  readonly source: string;
  /** Read, create, replace, patch and delete single objects (plain JSON). */
  readonly rest: RestApi;
  /** The transport (for raw requests). */
  readonly transport: HttpTransport;
  /**
   * Lists a collection page by page (limit/continue), each page through `rest.listPage`.
   * @param path e.g. `/api/v1/nodes`
   * @param options page size and signal
   * @returns all items of the collection's kind, the count of the others, and the
   *   resourceVersion to watch from
   * @throws {KubeApiError} on an API or network error
   */
  list(path: string, options?: ListOptions): Promise<ListResult>;
  /**
   * Watches a collection. Ends (returns) when the server closes the stream or the signal aborts.
   * @param path e.g. `/api/v1/nodes`
   * @param options resourceVersion, signal, timeouts
   * @returns the events; an ERROR event is thrown as `KubeApiError` (410 Expired means re-list)
   * @throws {KubeApiError} on an HTTP error, an ERROR event, a dead connection or a network error
   */
  watch(path: string, options?: WatchOptions): AsyncIterable<RawWatchEvent>;
  /** Closes pooled connections. */
  close(): void;
}

/**
 * Creates the client for one set of connection settings.
 * @param settings from `resolveConnectionSettings`
 * @param options registry, rate limit, user agent
 * @returns the client
 */
export function createKubeClient(
  settings: ConnectionSettings,
  options: KubeClientOptions,
): KubeClient {
  return kubeClientOver(createHttpTransport(settings, options), settings.source);
}

/**
 * A client over an existing transport (e.g. a per-controller view of one with its own rate
 * limit): the REST calls, list and watch all go through `transport`.
 * @param transport the transport every call goes through
 * @param source where the connection settings came from (for logs)
 * @returns the client; its `close()` closes the transport
 */
export function kubeClientOver(transport: HttpTransport, source: string): KubeClient {
  const rest = createRestApi(transport);
  return {
    source,
    rest,
    transport,
    list: (path, listOptions) => listAll(rest, path, listOptions ?? {}),
    watch: (path, watchOptions) => watchEvents(transport, path, watchOptions ?? {}),
    close: () => transport.close(),
  };
}

async function listAll(rest: RestApi, path: string, options: ListOptions): Promise<ListResult> {
  const { items, last, ignored } = await listEveryPage(rest, path, {
    pageSize: options.limit ?? LIST_PAGE_SIZE,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  return { items, resourceVersion: last.resourceVersion, ignored };
}
