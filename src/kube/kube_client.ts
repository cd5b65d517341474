/**
 * The Kubernetes client of Keelson: client-node's generated APIs (CoreV1Api, CoordinationV1Api,
 * EventsV1Api) plus a raw paginated `list` and a streaming `watch`, all over one Deno HTTP/1.1
 * transport (`http_transport.ts`). `list`/`watch` return plain JSON; `informer.ts` turns it into
 * client-node models (`model_codec.ts`) so the whole program sees one representation.
 *
 * @module
 */
import {
  CoordinationV1Api,
  CoreV1Api,
  createConfiguration,
  EventsV1Api,
  ServerConfiguration,
} from "@kubernetes/client-node";
import type { Registry } from "prom-client";
import { isAbortError, statusError } from "./api_error.ts";
import { createHttpTransport, type HttpTransport } from "./http_transport.ts";
import type { ConnectionSettings } from "./kubeconfig.ts";
import { KubeApiError } from "./ports.ts";
import { LineSplitter, parseWatchLine, type RawWatchEvent } from "./watch_lines.ts";

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
}

/** Options of `KubeClient.watch`. */
export interface WatchOptions {
  /** Start after this version (from a list or the last event). */
  resourceVersion?: string;
  /** Ends the watch (the iterator then simply returns). */
  signal?: AbortSignal;
  /** Server-side timeout; the server closes the watch after it. @default random 300–600 (client-go) */
  timeoutSeconds?: number;
  /** Ask for BOOKMARK events. @default true */
  allowWatchBookmarks?: boolean;
  /** A connection silent this long is treated as dead. @default (timeoutSeconds + 30) s */
  idleTimeoutMs?: number;
}

/** Options of `KubeClient.list`. */
export interface ListOptions {
  /** Page size. @default 500 */
  limit?: number;
  /** Aborts the list. */
  signal?: AbortSignal;
}

/** A full list: every item (plain JSON) and the list's resourceVersion. */
export interface ListResult {
  items: unknown[];
  resourceVersion: string;
}

/** The client every part of Keelson uses to talk to the API server. */
export interface KubeClient {
  /** Where the connection settings came from (for logs). */
  readonly source: string;
  readonly core: CoreV1Api;
  readonly coordination: CoordinationV1Api;
  readonly events: EventsV1Api;
  /** The transport (for raw requests). */
  readonly transport: HttpTransport;
  /**
   * Lists a collection page by page (limit/continue).
   * @param path e.g. `/api/v1/nodes`
   * @param options page size and signal
   * @returns all items and the resourceVersion to watch from
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
 * A client over an existing transport (e.g. a per-controller view of one: `client_factory.ts`).
 * @param transport the transport every call goes through
 * @param source where the connection settings came from (for logs)
 * @returns the client; its `close()` closes the transport
 */
export function kubeClientOver(transport: HttpTransport, source: string): KubeClient {
  const configuration = createConfiguration({
    baseServer: new ServerConfiguration(transport.baseUrl, {}),
    httpApi: transport.httpApi,
  });
  return {
    source,
    core: new CoreV1Api(configuration),
    coordination: new CoordinationV1Api(configuration),
    events: new EventsV1Api(configuration),
    transport,
    list: (path, listOptions) => listAll(transport, path, listOptions ?? {}),
    watch: (path, watchOptions) => watchEvents(transport, path, watchOptions ?? {}),
    close: () => transport.close(),
  };
}

/**
 * A random server-side watch timeout between 5 and 10 minutes, as client-go's reflector picks,
 * so watches of many clients do not all renew at once.
 * @returns seconds
 */
export function randomWatchTimeoutSeconds(): number {
  return 300 + Math.floor(Math.random() * 300);
}

async function listAll(
  transport: HttpTransport,
  path: string,
  options: ListOptions,
): Promise<ListResult> {
  const items: unknown[] = [];
  let resourceVersion = "";
  let continueToken: string | undefined;
  let restarted = false;
  do {
    const query = new URLSearchParams({ limit: String(options.limit ?? 500) });
    if (continueToken) query.set("continue", continueToken);
    const page = await request(transport, `${path}?${query}`, `list ${path}`, options.signal);
    if (page.status === 410 && continueToken && !restarted) {
      // the continue token expired between pages: start again with one full, consistent list
      restarted = true;
      items.length = 0;
      continueToken = undefined;
      continue;
    }
    const body = await page.text();
    if (page.status !== 200) {
      throw statusError(page.status, body, page.headers.get("retry-after"), `list ${path}`);
    }
    const list = JSON.parse(body) as {
      items?: unknown[] | null;
      metadata?: { resourceVersion?: string; continue?: string };
    };
    items.push(...(list.items ?? []));
    resourceVersion = list.metadata?.resourceVersion ?? "";
    continueToken = list.metadata?.continue || undefined;
  } while (continueToken);
  return { items, resourceVersion };
}

async function request(
  transport: HttpTransport,
  url: string,
  what: string,
  signal: AbortSignal | undefined,
): Promise<Response> {
  try {
    return await transport.fetch(url, { signal: signal ?? null });
  } catch (error) {
    if (isAbortError(error) || signal?.aborted) throw error;
    throw new KubeApiError(`Cannot ${what}: ${errorText(error)}`, { code: 0, cause: error });
  }
}

async function* watchEvents(
  transport: HttpTransport,
  path: string,
  options: WatchOptions,
): AsyncGenerator<RawWatchEvent> {
  const timeoutSeconds = options.timeoutSeconds ?? randomWatchTimeoutSeconds();
  const idleMs = options.idleTimeoutMs ?? (timeoutSeconds + 30) * 1000;
  const query = new URLSearchParams({ watch: "true", timeoutSeconds: String(timeoutSeconds) });
  if (options.resourceVersion) query.set("resourceVersion", options.resourceVersion);
  if (options.allowWatchBookmarks ?? true) query.set("allowWatchBookmarks", "true");
  const what = `watch ${path}`;
  // our own controller: aborted by the caller's signal, by an idle connection, or by return()
  const controller = new AbortController();
  const onAbort = () => controller.abort(options.signal?.reason);
  options.signal?.addEventListener("abort", onAbort, { once: true });
  let idle = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      idle = true;
      controller.abort(new DOMException("watch idle", "TimeoutError"));
    }, idleMs);
  };
  try {
    if (options.signal?.aborted) return;
    arm();
    let response: Response;
    try {
      response = await transport.fetch(`${path}?${query}`, { signal: controller.signal });
    } catch (error) {
      if (options.signal?.aborted) return;
      if (idle) {
        throw new KubeApiError(`Cannot ${what}: no answer within ${idleMs} ms`, { code: 0 });
      }
      throw new KubeApiError(`Cannot ${what}: ${errorText(error)}`, { code: 0, cause: error });
    }
    if (response.status !== 200 || !response.body) {
      const body = await response.text().catch(() => "");
      throw statusError(response.status, body, response.headers.get("retry-after"), what);
    }
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    const lines = new LineSplitter();
    try {
      while (true) {
        let chunk: ReadableStreamReadResult<string>;
        try {
          chunk = await reader.read();
        } catch (error) {
          if (options.signal?.aborted) return;
          if (idle) {
            throw new KubeApiError(
              `Cannot ${what}: the connection was silent for ${idleMs} ms and is treated as dead`,
              { code: 0 },
            );
          }
          throw new KubeApiError(`Cannot ${what}: ${errorText(error)}`, { code: 0, cause: error });
        }
        if (chunk.done) break;
        arm();
        for (const line of lines.push(chunk.value)) yield eventOrThrow(line, what);
      }
      const last = lines.flush();
      if (last !== undefined) yield eventOrThrow(last, what);
    } finally {
      reader.cancel().catch(() => {});
    }
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", onAbort);
    controller.abort();
  }
}

function eventOrThrow(line: string, what: string): RawWatchEvent {
  let event: RawWatchEvent;
  try {
    event = parseWatchLine(line);
  } catch (error) {
    throw new KubeApiError(`Cannot ${what}: ${errorText(error)}`, { code: 0, cause: error });
  }
  if (event.type === "ERROR") {
    const status = event.object as { code?: number } | undefined;
    throw statusError(status?.code ?? 500, JSON.stringify(event.object), undefined, what);
  }
  return event;
}

function errorText(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
    return `${error.message}${cause}`;
  }
  return String(error);
}
