/**
 * The HTTP transport of the Kubernetes client: Deno's native `fetch` over a replaceable
 * connection (`connection.ts`: HTTP/2 for HTTPS, one multiplexed connection, as client-go).
 *
 * Why not client-node's own transport: under Deno 2.9.6 its undici path negotiates HTTP/2 through
 * Deno's node:http2 binding, which crashes the process on a GOAWAY (denoland/deno#36788), an
 * aborted watch body never ends (node:stream `isReadable` returns null), every call opens a new
 * connection, and client certificates through node's https.Agent reportedly give 401
 * (denoland/deno#19052).
 *
 * Every wait is bounded here: the rate limiter, the response headers and every body read end when
 * the caller's signal aborts, when the connection is replaced, and (all but watches) at the
 * request deadline; the body is then cancelled so the stream is released. Every body but a
 * watch's is read here, through the one bounded reader (`bounded_body.ts`): a 2xx body up to the
 * request's cap (past it the request fails and the body is cancelled), an error body cut to
 * `BODY_LIMITS.errorText`. A deadline that passes
 * counts as `code="<timeout>"` in `rest_client_requests_total` and replaces the connection. A
 * liveness ping (`liveness.ts`) replaces a connection that stopped answering.
 *
 * @module
 */
import { Counter, Histogram, type Registry } from "prom-client";
import { readInputFile, TOKEN_FILE } from "../files/read_input_file.ts";
import { logger } from "../log/logging.ts";
import { guardBody } from "./abortable_body.ts";
import { BODY_LIMITS, readBoundedBody, readBoundedResponse } from "./bounded_body.ts";
import { ApiConnection, type ReplaceReason, RequestTimeoutError } from "./connection.ts";
import type { ConnectionSettings } from "./kubeconfig.ts";
import { type Ping, PING_INTERVAL_MS, PING_TIMEOUT_MS, startLiveness } from "./liveness.ts";
import { TokenBucket } from "./token_bucket.ts";
import { errorMessage } from "../log/error_message.ts";
import { declareOnce } from "../metrics/registry.ts";

const log = logger("kube", "transport");

/** Deadline of every request but watches: rate-limiter wait, headers and the whole body. */
export const REQUEST_TIMEOUT_MS = 30_000;

/** How often a token file is re-read (projected ServiceAccount tokens rotate hourly or faster). */
export const TOKEN_FILE_REFRESH_MS = 60_000;

/** client-go's request latency buckets (seconds). */
const LATENCY_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60];

/** Options for `createHttpTransport`. */
export interface HttpTransportOptions {
  /** Where the `rest_client_*` metrics are registered. */
  registry: Registry;
  /** Sustained requests per second; 0 disables the limit. @default 20 */
  qps?: number;
  /** Requests allowed at once. @default 30 */
  burst?: number;
  /** The User-Agent header. @default "keelson" */
  userAgent?: string;
  /** Clock in milliseconds (token-file refresh, rate limit). @default performance.now */
  now?: () => number;
  /** Deadline of every request but watches; 0 = none. @default REQUEST_TIMEOUT_MS */
  requestTimeoutMs?: number;
  /** Liveness ping interval; 0 = no pings. @default PING_INTERVAL_MS */
  pingIntervalMs?: number;
  /** A ping unanswered this long replaces the connection. @default PING_TIMEOUT_MS */
  pingTimeoutMs?: number;
}

/** Request options of `HttpTransport.fetch`. */
export interface TransportRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: BodyInit | null;
  signal?: AbortSignal | null;
  /** The rate limit to wait for. @default the transport's own */
  limiter?: TokenBucket;
  /**
   * The largest 2xx body read (not for watches); a larger one fails the request with a
   * `ResponseTooLargeError`. @default BODY_LIMITS.object
   */
  maxBodyBytes?: number;
  /** What the body is, for that error. @default "one object" */
  bodyName?: string;
}

/** The transport shared by the REST calls (`rest_api.ts`) and the raw list/watch calls. */
export interface HttpTransport {
  /** The base URL requests go to. */
  readonly baseUrl: string;
  /** The current connection generation (increases with every replacement). */
  readonly generation: number;
  /**
   * Sends one request: waits for the rate limiter, adds credentials and User-Agent, records
   * metrics. A watch (`watch=true`) returns at once with a streaming body whose reads end on
   * abort; any other request returns with its whole body read, within the deadline and the cap
   * (`maxBodyBytes`; an error answer's body cut to `BODY_LIMITS.errorText`).
   * @param url absolute URL, or a path below the server
   * @param request method, headers, body, signal
   * @returns the response (any status)
   * @throws {TypeError} on a network or TLS failure; the signal's reason on abort; a
   *   `RequestTimeoutError` at the deadline; a `ConnectionReplacedError` when the connection it
   *   ran on was replaced; a `ResponseTooLargeError` past the body's cap
   */
  fetch(url: string, request?: TransportRequest): Promise<Response>;
  /**
   * Replaces the current connection (every open request on it fails and is retried).
   * @param reason metric label
   * @param detail for the log
   * @returns true when replaced
   */
  replaceConnection(reason: ReplaceReason, detail: string): boolean;
  /**
   * A view of this transport with its own client-side rate limit and User-Agent: the same
   * connections, credentials, deadlines and metrics. Upstream gives each controller such a client
   * (`ClientBuilder.ClientOrDie(name)`), so one controller's burst does not slow another.
   * @param limit the view's QPS and burst (defaults as `createHttpTransport`) and User-Agent
   * @returns the view; its `close()` does nothing (the transport it came from owns the connections)
   */
  withRateLimit(limit: { qps?: number; burst?: number; userAgent?: string }): HttpTransport;
  /** Stops the liveness pings, aborts open requests and closes the pooled connections. */
  close(): void;
}

/**
 * Builds the transport for one set of connection settings.
 * @param settings where the API server is and how to authenticate
 * @param options metrics registry, rate limit, user agent, deadlines, liveness
 * @returns the transport
 * @throws {TypeError} for settings Deno's fetch cannot honour
 */
export function createHttpTransport(
  settings: ConnectionSettings,
  options: HttpTransportOptions,
): HttpTransport {
  const now = options.now ?? (() => performance.now());
  const bucket = new TokenBucket({ qps: options.qps, burst: options.burst, now });
  const metrics = transportMetrics(options.registry);
  const userAgent = options.userAgent ?? "keelson";
  const deadlineMs = options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  const connection = new ApiConnection(settings, options.registry);
  const baseUrl = settings.server;
  const tokens = tokenSource(settings, now);
  const host = new URL(settings.server).host;

  // A plain record (names lower-cased, the caller's winning over the defaults): fetch validates
  // it once, where a Headers object would be built and validated twice.
  async function headers(request: TransportRequest): Promise<Record<string, string>> {
    const headers: Record<string, string> = {
      "user-agent": userAgent,
      accept: "application/json",
    };
    for (const [name, value] of Object.entries(request.headers ?? {})) {
      headers[name.toLowerCase()] = value;
    }
    const authorization = await tokens.authorization();
    if (authorization) headers.authorization = authorization;
    return headers;
  }

  async function send(url: string, request: TransportRequest = {}): Promise<Response> {
    const method = (request.method ?? "GET").toUpperCase();
    const verb = method === "GET" && url.includes("watch=true") ? "WATCH" : method;
    const generation = connection.current;
    // One signal for everything this request waits on: the caller's stop, the generation being
    // replaced, and (not for watches) the deadline. Our own listeners, never fetch's (see
    // abortable_body.ts for why fetch's own propagation cannot be relied on).
    const bound = new RequestSignal(request.signal ?? undefined, generation.signal);
    if (verb !== "WATCH" && deadlineMs > 0) {
      bound.deadline(
        deadlineMs,
        () => new RequestTimeoutError(`no answer from ${host} within ${deadlineMs} ms`),
      );
    }
    const signal = bound.signal;
    let handedOver = false;
    const started = now();
    let code = "<error>";
    try {
      const waited = await (request.limiter ?? bucket).wait(signal);
      metrics.rateLimiter.observe({ verb, host }, waited / 1000);
      const target = url.startsWith("/") ? baseUrl + url : url;
      const sentAt = now();
      const response = await raceAbort(
        fetch(target, {
          method,
          headers: await headers(request),
          body: request.body ?? null,
          signal,
          // a body goes over HTTP/1.1: head and body in one write (connection.ts says why)
          client: request.body === undefined || request.body === null
            ? generation.client
            : generation.writeClient,
        }),
        signal,
      );
      metrics.duration.observe({ verb, host }, (now() - sentAt) / 1000);
      if (!response.body || NULL_BODY_STATUS.has(response.status)) {
        code = String(response.status);
        return response;
      }
      const init = {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
      };
      if (verb === "WATCH") {
        code = String(response.status);
        handedOver = true;
        return new Response(guardBody(response.body, signal, () => bound.dispose()), init);
      }
      // the whole answer within the deadline (a body stalled on a dead connection fails too)
      // and the cap (a body past it is cancelled, nothing past it kept)
      const ok = response.status >= 200 && response.status <= 299;
      const { bytes } = await readBoundedResponse(response, {
        maxBytes: ok ? request.maxBodyBytes ?? BODY_LIMITS.object : BODY_LIMITS.errorText,
        what: ok ? request.bodyName ?? "one object" : "an error answer",
        truncate: !ok,
        signal,
      });
      code = String(response.status);
      return new Response(bytes, init);
    } catch (error) {
      const reason = signal.aborted ? signal.reason : error;
      if (reason instanceof RequestTimeoutError) {
        code = "<timeout>";
        connection.replace(
          generation.id,
          "request-deadline",
          `${method} ${url}: ${reason.message}`,
        );
      }
      throw reason;
    } finally {
      metrics.requests.inc({ code, method, host });
      if (code === "<timeout>") metrics.duration.observe({ verb, host }, (now() - started) / 1000);
      if (!handedOver) bound.dispose();
    }
  }

  const ping: Ping = async (generation, timeoutMs, stop) => {
    const bound = new RequestSignal(stop, generation.signal);
    bound.deadline(timeoutMs, () => new RequestTimeoutError("ping timeout"));
    try {
      const response = await raceAbort(
        fetch(`${baseUrl}/version`, {
          headers: await headers({}),
          signal: bound.signal,
          client: generation.client,
        }),
        bound.signal,
      );
      await readBoundedBody(response.body, {
        maxBytes: BODY_LIMITS.errorText,
        what: "a version answer",
        truncate: true,
        signal: bound.signal,
      });
      return "answered";
    } catch (error) {
      const reason = bound.signal.aborted ? bound.signal.reason : error;
      return reason instanceof RequestTimeoutError ? "timeout" : "failed";
    } finally {
      bound.dispose();
    }
  };
  const pingIntervalMs = options.pingIntervalMs ?? PING_INTERVAL_MS;
  const liveness = pingIntervalMs > 0
    ? startLiveness(connection, ping, {
      registry: options.registry,
      intervalMs: pingIntervalMs,
      timeoutMs: options.pingTimeoutMs ?? PING_TIMEOUT_MS,
    })
    : undefined;

  const replaceConnection: HttpTransport["replaceConnection"] = (reason, detail) =>
    connection.replace(connection.current.id, reason, detail);
  const withRateLimit: HttpTransport["withRateLimit"] = (limit) => {
    const limiter = new TokenBucket({ qps: limit.qps, burst: limit.burst, now });
    const agent = limit.userAgent ?? userAgent;
    return {
      baseUrl,
      fetch: (url, request = {}) =>
        send(url, { ...request, limiter, headers: { "user-agent": agent, ...request.headers } }),
      replaceConnection,
      get generation() {
        return connection.current.id;
      },
      withRateLimit,
      close: () => {},
    };
  };

  return {
    baseUrl,
    fetch: send,
    replaceConnection,
    get generation() {
      return connection.current.id;
    },
    withRateLimit,
    close: () => {
      liveness?.stop();
      connection.close();
    },
  };
}

const NULL_BODY_STATUS = new Set([101, 204, 205, 304]);

/** An abort signal fed by explicit listeners on its sources (strong references) and a timer. */
class RequestSignal {
  readonly #controller = new AbortController();
  readonly #sources: AbortSignal[];
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #onAbort = (event: Event) => {
    this.#abort((event.target as AbortSignal).reason);
  };

  constructor(...sources: Array<AbortSignal | undefined>) {
    this.#sources = sources.filter((s): s is AbortSignal => s !== undefined);
    for (const source of this.#sources) {
      if (source.aborted) this.#abort(source.reason);
      else source.addEventListener("abort", this.#onAbort, { once: true });
    }
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  deadline(ms: number, reason: () => Error): void {
    if (this.#controller.signal.aborted) return;
    this.#timer = setTimeout(() => this.#abort(reason()), ms);
  }

  dispose(): void {
    clearTimeout(this.#timer);
    for (const source of this.#sources) source.removeEventListener("abort", this.#onAbort);
  }

  #abort(reason: unknown): void {
    if (!this.#controller.signal.aborted) this.#controller.abort(reason);
    this.dispose();
  }
}

/**
 * Settles with the response, or rejects with the signal's reason as soon as it aborts; a response
 * arriving after that has its body cancelled so its stream is released.
 */
function raceAbort(promise: Promise<Response>, signal: AbortSignal): Promise<Response> {
  return new Promise<Response>((resolve, reject) => {
    let lost = false;
    const onAbort = () => {
      lost = true;
      reject(signal.reason);
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (response) => {
        signal.removeEventListener("abort", onAbort);
        if (lost) response.body?.cancel().catch(() => {});
        else resolve(response);
      },
      (error) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}
/** The Authorization header value, re-reading a token file at most once a minute. */
function tokenSource(
  settings: ConnectionSettings,
  now: () => number,
): { authorization(): Promise<string | undefined> } {
  let cached: string | undefined;
  let readAt = -Infinity;
  return {
    async authorization() {
      if (settings.tokenFile) {
        if (cached === undefined || now() - readAt >= TOKEN_FILE_REFRESH_MS) {
          try {
            const token = (await readInputFile(settings.tokenFile, TOKEN_FILE)).trim();
            if (token) cached = token;
            readAt = now();
          } catch (error) {
            // keep the previous token: a rotation in progress must not break every request
            log.warn("Cannot read token file {path}: {error}", {
              path: settings.tokenFile,
              error: errorMessage(error),
            });
            if (cached === undefined && settings.token === undefined) throw error;
          }
        }
        if (cached) return `Bearer ${cached}`;
      }
      if (settings.token) return `Bearer ${settings.token}`;
      if (settings.username !== undefined) {
        const pair = new TextEncoder().encode(`${settings.username}:${settings.password ?? ""}`);
        return `Basic ${btoa(String.fromCharCode(...pair))}`;
      }
      return undefined;
    },
  };
}

interface TransportMetrics {
  requests: Counter<"code" | "method" | "host">;
  duration: Histogram<"verb" | "host">;
  rateLimiter: Histogram<"verb" | "host">;
}

/**
 * Declares the `rest_client_*` families (HELP and TYPE; their series appear with the first
 * request, as upstream's), so they exist from the agent's start, before any kubeconfig resolves.
 * @param registry the process's registry
 */
export function declareRestClientMetrics(registry: Registry): void {
  transportMetrics(registry);
}

/** The upstream client-go metric names; shared by every client on one registry. */
function transportMetrics(registry: Registry): TransportMetrics {
  return {
    requests: declareOnce(registry, "rest_client_requests_total", () =>
      new Counter({
        name: "rest_client_requests_total",
        help:
          "Number of HTTP requests to the Kubernetes API, partitioned by status code, method, and host.",
        labelNames: ["code", "method", "host"],
        registers: [registry],
      })),
    duration: declareOnce(registry, "rest_client_request_duration_seconds", () =>
      new Histogram({
        name: "rest_client_request_duration_seconds",
        help: "Request latency in seconds (until response headers), broken down by verb and host.",
        labelNames: ["verb", "host"],
        buckets: LATENCY_BUCKETS,
        registers: [registry],
      })),
    rateLimiter: declareOnce(
      registry,
      "rest_client_rate_limiter_duration_seconds",
      () =>
        new Histogram({
          name: "rest_client_rate_limiter_duration_seconds",
          help: "Client side rate limiter latency in seconds, broken down by verb and host.",
          labelNames: ["verb", "host"],
          buckets: LATENCY_BUCKETS,
          registers: [registry],
        }),
    ),
  };
}
