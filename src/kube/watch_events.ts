/**
 * One watch request as an async iterable of raw events. Every wait in it ends on the caller's
 * signal (the iterator then simply returns), on the connection being replaced, or when the
 * connection stays silent past its bound (then the connection is replaced as dead): the
 * transport's body reads reject on abort instead of waiting for the next byte, and the body is
 * cancelled so the stream is released. Each event (one line) is bounded by
 * `BODY_LIMITS.watchEvent`, an error answer's text by `BODY_LIMITS.errorText`.
 *
 * @module
 */
import { errorMessageWithCause } from "../log/error_message.ts";
import { statusError } from "./api_error.ts";
import {
  BODY_LIMITS,
  readBoundedResponse,
  RESPONSE_TOO_LARGE,
  ResponseTooLargeError,
} from "./bounded_body.ts";
import { ConnectionReplacedError } from "./connection.ts";
import type { HttpTransport } from "./http_transport.ts";
import { KubeApiError } from "./ports.ts";
import { LineSplitter, parseWatchLine, type RawWatchEvent } from "./watch_lines.ts";

/** Options of `watchEvents`. */
export interface WatchOptions {
  /** Start after this version (from a list or the last event). */
  resourceVersion?: string;
  /** Ends the watch (the iterator then simply returns). */
  signal?: AbortSignal;
  /** Server-side timeout; the server closes the watch after it. @default random 300–600 (client-go) */
  timeoutSeconds?: number;
  /** Ask for BOOKMARK events. @default true */
  allowWatchBookmarks?: boolean;
  /**
   * A watch silent this long is treated as dead and its connection replaced. The liveness ping
   * notices a dead connection much sooner; this catches a server that stopped sending on a live
   * one. @default (timeoutSeconds + 30) s
   */
  idleTimeoutMs?: number;
}

/** Reason of the `KubeApiError` a watch fails with when its connection was replaced. */
export const CONNECTION_REPLACED = "ConnectionReplaced";

/**
 * A random server-side watch timeout between 5 and 10 minutes, as client-go's reflector picks,
 * so watches of many clients do not all renew at once.
 * @returns seconds
 */
export function randomWatchTimeoutSeconds(): number {
  return 300 + Math.floor(Math.random() * 300);
}

/**
 * Watches a collection.
 * @param transport the transport
 * @param path e.g. `/api/v1/nodes`
 * @param options resourceVersion, signal, timeouts
 * @returns the events; ends when the server closes the stream or the signal aborts
 * @throws {KubeApiError} on an HTTP error, an ERROR event (410 Expired means re-list), a dead or
 *   replaced connection (code 0) or a network error (code 0)
 */
export async function* watchEvents(
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
  // our own controller: aborted by the caller's signal, by a silent connection, or by return()
  const controller = new AbortController();
  const onAbort = () => controller.abort(options.signal?.reason);
  options.signal?.addEventListener("abort", onAbort, { once: true });
  let idle = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  // a chunk only notes its time; the one timer looks when the bound could have passed and sleeps
  // again for what is left (a timer replaced per event cost more than the event's parse)
  let lastChunkAt = performance.now();
  const check = () => {
    const silentMs = performance.now() - lastChunkAt;
    if (silentMs < idleMs) {
      timer = setTimeout(check, idleMs - silentMs);
      return;
    }
    idle = true;
    controller.abort(new DOMException("watch idle", "TimeoutError"));
  };
  const arm = () => {
    lastChunkAt = performance.now();
    timer ??= setTimeout(check, idleMs);
  };
  const failure = (error: unknown): KubeApiError => {
    if (idle) {
      const detail = `${what} was silent for ${idleMs} ms`;
      transport.replaceConnection("watch-silent", detail);
      return new KubeApiError(`Cannot ${what}: ${detail} and is treated as dead`, { code: 0 });
    }
    if (error instanceof ConnectionReplacedError) {
      return new KubeApiError(`Cannot ${what}: ${error.message}`, {
        code: 0,
        reason: CONNECTION_REPLACED,
        cause: error,
      });
    }
    if (error instanceof KubeApiError) return error;
    return new KubeApiError(`Cannot ${what}: ${errorMessageWithCause(error)}`, {
      code: 0,
      ...(error instanceof ResponseTooLargeError ? { reason: RESPONSE_TOO_LARGE } : {}),
      cause: error,
    });
  };
  try {
    if (options.signal?.aborted) return;
    arm();
    let response: Response;
    try {
      response = await transport.fetch(`${path}?${query}`, { signal: controller.signal });
    } catch (error) {
      if (options.signal?.aborted) return;
      throw failure(error);
    }
    if (response.status !== 200 || !response.body) {
      const body = await readBoundedResponse(response, {
        maxBytes: BODY_LIMITS.errorText,
        what: "an error answer",
        truncate: true,
        signal: controller.signal,
      }).then(({ bytes }) => new TextDecoder().decode(bytes), () => "");
      throw statusError(response.status, body, response.headers.get("retry-after"), what);
    }
    // read the transport's guarded body directly: a read rejects as soon as `controller` aborts
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    const lines = new LineSplitter(BODY_LIMITS.watchEvent);
    try {
      while (true) {
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader.read();
        } catch (error) {
          if (options.signal?.aborted) return;
          throw failure(error);
        }
        if (chunk.done) break;
        arm();
        let complete: string[];
        try {
          complete = lines.push(decoder.decode(chunk.value, { stream: true }));
        } catch (error) {
          throw failure(error);
        }
        for (const line of complete) yield eventOrThrow(line, what);
      }
      let complete: string[];
      try {
        complete = lines.push(decoder.decode());
      } catch (error) {
        throw failure(error);
      }
      for (const line of complete) yield eventOrThrow(line, what);
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
    throw new KubeApiError(`Cannot ${what}: ${errorMessageWithCause(error)}`, {
      code: 0,
      cause: error,
    });
  }
  if (event.type === "ERROR") {
    const code = (event.object as { code?: unknown } | undefined)?.code;
    throw statusError(
      typeof code === "number" && Number.isInteger(code) && code >= 100 && code <= 599 ? code : 500,
      JSON.stringify(event.object),
      undefined,
      what,
    );
  }
  return event;
}
