/**
 * A watched cache of one resource kind (client-go's reflector + indexer + shared informer, in
 * small): list, then watch from the list's resourceVersion with bookmarks; re-list on 410 Expired;
 * reconnect with jittered exponential backoff (1 s doubling to 30 s) on any other error; never stop
 * until the signal aborts. Objects are the server's plain JSON, trimmed once on arrival by the
 * kind's cache transform (`cache_transform.ts`: no managedFields, no fields nobody reads).
 *
 * A watch that failed because its connection was found dead and replaced is re-established at
 * once over the new connection.
 *
 * While the API server does not answer at all (connection refused or reset: code 0) the delay stays
 * at about 1 s instead of doubling, so an apiserver restart is noticed within a second or two; a
 * refused connect costs the server nothing. HTTP errors (5xx, 403, 429 ...) back off fully, and a
 * `Retry-After` is honoured.
 *
 * @module
 */
import { Counter, type Registry } from "prom-client";
import { logger } from "../log/logging.ts";
import type { KubeClient } from "./kube_client.ts";
import { type CacheTransform, cacheTransformFor } from "./cache_transform.ts";
import { type Informer, type InformerEvent, KubeApiError, objectKey } from "./ports.ts";
import { delay } from "./delay.ts";
import { errorMessage } from "../log/error_message.ts";
import { declareOnce } from "../metrics/registry.ts";
import { CONNECTION_REPLACED } from "./watch_events.ts";
import { RESPONSE_TOO_LARGE } from "./bounded_body.ts";
import { belongsToCollection, collectionKindOf } from "./list_items.ts";

const log = logger("kube", "informer");

/** First reconnect delay. */
export const INITIAL_BACKOFF_MS = 1_000;
/** Longest reconnect delay. */
export const MAX_BACKOFF_MS = 30_000;
/** Longest reconnect delay while the server does not answer at all (before jitter). */
export const UNREACHABLE_BACKOFF_MS = 1_000;

/** An object with the metadata an informer needs. */
export interface KubeObject {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

/** Options for `createInformer`. */
export interface InformerOptions {
  /** Collection path, e.g. `/api/v1/nodes`, `/api/v1/services`. */
  path: string;
  /** Kind of the items, e.g. `Node` (their API version is the path's). */
  kind: string;
  /** Trims each object before it is cached. @default cacheTransformFor(kind) */
  transform?: CacheTransform;
  /** Every this many ms, every cached object is delivered again as an update; 0 = never. @default 0 */
  resyncMs?: number;
  /** Where `keelson_informer_*` metrics go. */
  registry?: Registry;
  /** Sleep used for backoff and resync (injectable for tests). @default delay */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Random source for the jitter. @default Math.random */
  random?: () => number;
}

/** An informer that runs until its signal aborts. */
export type RunnableInformer<T> = Informer<T> & {
  /**
   * Lists and watches until `signal` aborts. Never rejects because of API errors.
   * @param signal stops the informer
   * @returns when stopped
   */
  run(signal: AbortSignal): Promise<void>;
};

/**
 * Creates an informer for one collection.
 * @param client the Kubernetes client (only `list` and `watch` are used)
 * @param options path, kind, resync, metrics
 * @returns the informer; call `run(signal)` to start it
 */
export function createInformer<T extends KubeObject>(
  client: Pick<KubeClient, "list" | "watch">,
  options: InformerOptions,
): RunnableInformer<T> {
  const transform = options.transform ?? cacheTransformFor(options.kind);
  const sleep = options.sleep ?? delay;
  const random = options.random ?? Math.random;
  const cache = new Map<string, T>();
  const handlers = new Set<(event: InformerEvent<T>) => void>();
  const syncWaiters = new Set<() => void>();
  const metrics = options.registry ? informerMetrics(options.registry) : undefined;
  const resource = options.path;
  // the version from the path, as the client's list checks it: one answer for both
  const expected = { kind: options.kind, apiVersion: collectionKindOf(options.path).apiVersion };
  let synced = false;

  // a Service inside the Node list is not a Node: left out, counted and said once per list
  function ignoredItems(count: number): void {
    metrics?.ignored.inc({ resource }, count);
    log.warn(
      "Ignored {count} object(s) from {resource} whose kind or apiVersion is not {kind} {apiVersion}",
      { count, resource, kind: expected.kind, apiVersion: expected.apiVersion },
    );
  }

  function emit(event: InformerEvent<T>): void {
    for (const handler of handlers) {
      try {
        handler(event);
      } catch (error) {
        // a broken handler must not break the cache or the other handlers
        log.error("Informer handler failed for {resource} {key}: {error}", {
          resource,
          key: objectKey(event.object),
          error: errorMessage(error),
        });
      }
    }
  }

  function upsert(object: T): void {
    const key = objectKey(object);
    const old = cache.get(key);
    cache.set(key, object);
    emit(old ? { type: "update", object, old } : { type: "add", object });
  }

  function replace(items: unknown[]): void {
    const seen = new Set<string>();
    for (const raw of items) {
      const object = transform(raw) as T;
      seen.add(objectKey(object));
      upsert(object);
    }
    for (const [key, old] of cache) {
      if (seen.has(key)) continue;
      cache.delete(key);
      emit({ type: "delete", object: old, old });
    }
    if (!synced) {
      synced = true;
      for (const wake of syncWaiters) wake();
      syncWaiters.clear();
    }
  }

  async function listAndWatch(signal: AbortSignal, state: { rv: string }): Promise<number> {
    if (state.rv === "") {
      metrics?.lists.inc({ resource });
      const list = await client.list(options.path, { signal });
      if (list.ignored > 0) ignoredItems(list.ignored);
      replace(list.items);
      state.rv = list.resourceVersion;
    }
    let events = 0;
    const watch = client.watch(options.path, {
      resourceVersion: state.rv,
      allowWatchBookmarks: true,
      signal,
    });
    for await (const event of watch) {
      events++;
      const meta = (event.object as KubeObject | undefined)?.metadata;
      if (meta?.resourceVersion) state.rv = meta.resourceVersion;
      if (event.type === "BOOKMARK") continue;
      if (!belongsToCollection(event.object, expected)) {
        ignoredItems(1);
        continue;
      }
      const object = transform(event.object) as T;
      if (event.type === "DELETED") {
        const key = objectKey(object);
        const old = cache.get(key);
        cache.delete(key);
        emit({ type: "delete", object, ...(old ? { old } : {}) });
      } else if (event.type === "ADDED" || event.type === "MODIFIED") {
        upsert(object);
      }
    }
    return events;
  }

  async function resyncLoop(signal: AbortSignal): Promise<void> {
    const every = options.resyncMs ?? 0;
    if (every <= 0) return;
    while (!signal.aborted) {
      try {
        await sleep(every, signal);
      } catch {
        return; // an injected sleep may reject on abort
      }
      if (signal.aborted) return;
      if (!synced) continue;
      // as client-go: a resync delivers every cached object as an update with old === object
      for (const object of [...cache.values()]) emit({ type: "update", object, old: object });
    }
  }

  async function run(signal: AbortSignal): Promise<void> {
    const state = { rv: "" };
    let backoff = INITIAL_BACKOFF_MS;
    const resync = resyncLoop(signal);
    while (!signal.aborted) {
      const started = performance.now();
      try {
        const events = await listAndWatch(signal, state);
        if (events > 0 || performance.now() - started > 1000) {
          backoff = INITIAL_BACKOFF_MS;
          continue; // the server ended a healthy watch (timeoutSeconds): watch again at once
        }
        throw new Error("the watch closed at once without events");
      } catch (error) {
        if (signal.aborted) break;
        if (error instanceof KubeApiError && error.code === 410) {
          log.info("Watch of {resource} expired; listing again", { resource });
          state.rv = "";
          continue;
        }
        metrics?.errors.inc({ resource });
        // an answer past its cap came from a server that answers: back off fully, so a
        // misbehaving server is not read at full speed again and again
        const unreachable = error instanceof KubeApiError && error.code === 0 &&
          error.reason !== RESPONSE_TOO_LARGE;
        const retryAfterMs = error instanceof KubeApiError && error.retryAfterSeconds
          ? error.retryAfterSeconds * 1000
          : 0;
        const base = unreachable ? Math.min(backoff, UNREACHABLE_BACKOFF_MS) : backoff;
        // a replaced connection is a fresh one already: watch again at once
        const replaced = error instanceof KubeApiError && error.reason === CONNECTION_REPLACED;
        const delay = replaced ? 0 : Math.max(retryAfterMs, Math.round(base * (0.5 + random())));
        log.warn("Watch of {resource} failed, retrying in {delayMs} ms: {error}", {
          resource,
          delayMs: delay,
          error: errorMessage(error),
        });
        try {
          await sleep(Math.min(delay, MAX_BACKOFF_MS), signal);
        } catch {
          break;
        }
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      }
    }
    await resync;
  }

  return {
    get: (key) => cache.get(key),
    list: () => [...cache.values()],
    hasSynced: () => synced,
    subscribe(handler) {
      handlers.add(handler);
      return () => handlers.delete(handler);
    },
    waitForSync(signal) {
      if (synced) return Promise.resolve(true);
      if (signal.aborted) return Promise.resolve(false);
      return new Promise((resolve) => {
        const wake = () => {
          signal.removeEventListener("abort", onAbort);
          resolve(true);
        };
        const onAbort = () => {
          syncWaiters.delete(wake);
          resolve(false);
        };
        syncWaiters.add(wake);
        signal.addEventListener("abort", onAbort, { once: true });
      });
    },
    run,
  };
}

interface InformerMetrics {
  lists: Counter<"resource">;
  errors: Counter<"resource">;
  ignored: Counter<"resource">;
}

function informerMetrics(registry: Registry): InformerMetrics {
  return {
    lists: declareOnce(registry, "keelson_informer_lists_total", () =>
      new Counter({
        name: "keelson_informer_lists_total",
        help: "Full lists made by informers (the first one and every re-list after 410 Expired).",
        labelNames: ["resource"],
        registers: [registry],
      })),
    errors: declareOnce(registry, "keelson_informer_watch_errors_total", () =>
      new Counter({
        name: "keelson_informer_watch_errors_total",
        help: "List or watch failures of informers, each followed by a backoff and a retry.",
        labelNames: ["resource"],
        registers: [registry],
      })),
    ignored: declareOnce(registry, "keelson_informer_ignored_objects_total", () =>
      new Counter({
        name: "keelson_informer_ignored_objects_total",
        help:
          "Objects in list answers or watch events left out because their kind or apiVersion is not the collection's.",
        labelNames: ["resource"],
        registers: [registry],
      })),
  };
}
