/**
 * The HTTP transport of the Kubernetes client: Deno's native `fetch` over ONE
 * `Deno.createHttpClient` per connection settings, HTTP/1.1 only, with keep-alive pooling.
 *
 * Why not client-node's own transport: under Deno 2.9.6 its undici path negotiates HTTP/2 and
 * Deno's node:http2 binding crashes the process on a GOAWAY (denoland/deno#36788), an aborted watch
 * body never ends (node:stream `isReadable` returns null), every call opens a new connection, and
 * client certificates through node's https.Agent reportedly give 401 (denoland/deno#19052).
 *
 * The transport adds the bearer/basic credentials, the client-side rate limit and the
 * `rest_client_*` metrics; the generated API (`createConfiguration({ httpApi })`) and the raw
 * list/watch calls both go through `fetch()` here.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import {
  type HttpLibrary,
  type RequestContext,
  ResponseContext,
  wrapHttpLibrary,
} from "@kubernetes/client-node";
import { Counter, Histogram, type Registry } from "prom-client";
import { logger } from "../log/logging.ts";
import type { ConnectionSettings } from "./kubeconfig.ts";
import { TokenBucket } from "./token_bucket.ts";
import { errorMessage } from "../log/error_message.ts";
import { declareOnce } from "../metrics/registry.ts";

const log = logger("kube", "transport");

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
}

/** Request options of `HttpTransport.fetch`. */
export interface TransportRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: BodyInit | null;
  signal?: AbortSignal | null;
  /** The rate limit to wait for. @default the transport's own */
  limiter?: TokenBucket;
}

/** The transport shared by the generated API and the raw list/watch calls. */
export interface HttpTransport {
  /** For `createConfiguration({ httpApi })`. */
  readonly httpApi: HttpLibrary;
  /** The base URL requests go to. */
  readonly baseUrl: string;
  /**
   * Sends one request: waits for the rate limiter, adds credentials and User-Agent, records metrics.
   * @param url absolute URL, or a path below the server
   * @param request method, headers, body, signal
   * @returns the response (any status; the body is not consumed)
   * @throws {TypeError} on a network or TLS failure; the signal's reason on abort
   */
  fetch(url: string, request?: TransportRequest): Promise<Response>;
  /**
   * A view of this transport with its own client-side rate limit and User-Agent: the same
   * connections, credentials and metrics. Upstream gives each controller such a client
   * (`ClientBuilder.ClientOrDie(name)`), so one controller's burst does not slow another.
   * @param limit the view's QPS and burst (defaults as `createHttpTransport`) and User-Agent
   * @returns the view; its `close()` does nothing (the transport it came from owns the connections)
   */
  withRateLimit(limit: { qps?: number; burst?: number; userAgent?: string }): HttpTransport;
  /** Closes the pooled connections. */
  close(): void;
}

/**
 * Builds the transport for one set of connection settings.
 * @param settings where the API server is and how to authenticate
 * @param options metrics registry, rate limit, user agent
 * @returns the transport
 */
export function createHttpTransport(
  settings: ConnectionSettings,
  options: HttpTransportOptions,
): HttpTransport {
  const now = options.now ?? (() => performance.now());
  const bucket = new TokenBucket({ qps: options.qps, burst: options.burst, now });
  const metrics = transportMetrics(options.registry);
  const userAgent = options.userAgent ?? "keelson";
  const { baseUrl, client } = buildClient(settings);
  const tokens = tokenSource(settings, now);
  const host = new URL(settings.server).host;

  async function send(url: string, request: TransportRequest = {}): Promise<Response> {
    const method = (request.method ?? "GET").toUpperCase();
    const verb = method === "GET" && url.includes("watch=true") ? "WATCH" : method;
    const waited = await (request.limiter ?? bucket).wait(request.signal ?? undefined);
    metrics.rateLimiter.observe({ verb, host }, waited / 1000);
    const headers = new Headers(request.headers);
    if (!headers.has("user-agent")) headers.set("user-agent", userAgent);
    if (!headers.has("accept")) headers.set("accept", "application/json");
    const authorization = await tokens.authorization();
    if (authorization) headers.set("authorization", authorization);
    const target = url.startsWith("/") ? baseUrl + url : url;
    const started = now();
    try {
      const response = await fetch(target, {
        method,
        headers,
        body: request.body ?? null,
        signal: request.signal ?? null,
        client,
      });
      metrics.requests.inc({ code: String(response.status), method, host });
      return response;
    } catch (error) {
      metrics.requests.inc({ code: "<error>", method, host });
      throw error;
    } finally {
      metrics.duration.observe({ verb, host }, (now() - started) / 1000);
    }
  }

  const withRateLimit: HttpTransport["withRateLimit"] = (limit) => {
    const limiter = new TokenBucket({ qps: limit.qps, burst: limit.burst, now });
    const agent = limit.userAgent ?? userAgent;
    const viewSend = (url: string, request: TransportRequest = {}) =>
      send(url, {
        ...request,
        limiter,
        headers: { "user-agent": agent, ...request.headers },
      });
    return {
      httpApi: httpApiOver(viewSend),
      baseUrl,
      fetch: viewSend,
      withRateLimit,
      close: () => {},
    };
  };

  return {
    httpApi: httpApiOver(send),
    baseUrl,
    fetch: send,
    withRateLimit,
    close: () => client.close(),
  };
}

/** client-node's HttpLibrary over one `send` (the generated APIs' way in). */
function httpApiOver(
  send: (url: string, request: TransportRequest) => Promise<Response>,
): HttpLibrary {
  return wrapHttpLibrary({
    async send(context: RequestContext): Promise<ResponseContext> {
      const body = context.getBody();
      const response = await send(context.getUrl(), {
        method: context.getHttpMethod(),
        headers: context.getHeaders(),
        body: body === undefined ? null : body as BodyInit,
        signal: context.getSignal() ?? null,
      });
      const headers: Record<string, string> = {};
      response.headers.forEach((value, name) => {
        headers[name] = value;
      });
      return new ResponseContext(response.status, headers, {
        text: () => response.text(),
        binary: async () => Buffer.from(await response.arrayBuffer()),
        stream: () => response.body,
      });
    },
  });
}

/** One Deno HttpClient, HTTP/1.1 only (keep-alive pooled). */
function buildClient(settings: ConnectionSettings): { baseUrl: string; client: Deno.HttpClient } {
  if (settings.tlsServerName && settings.tlsServerName !== new URL(settings.server).hostname) {
    throw new TypeError(
      `Cannot connect to ${settings.server}: a TLS server name ("${settings.tlsServerName}") ` +
        "other than the URL's host is not supported by Deno's fetch",
    );
  }
  if (settings.insecureSkipTlsVerify) {
    throw new TypeError(
      `Cannot connect to ${settings.server}: skipping TLS verification is not supported`,
    );
  }
  const base: Deno.CreateHttpClientOptions = { http1: true, http2: false };
  if (settings.caPem) base.caCerts = [settings.caPem];
  const client = settings.clientCertPem && settings.clientKeyPem
    ? Deno.createHttpClient({ ...base, cert: settings.clientCertPem, key: settings.clientKeyPem })
    : Deno.createHttpClient(base);
  return { baseUrl: settings.server, client };
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
            const token = (await Deno.readTextFile(settings.tokenFile)).trim();
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
