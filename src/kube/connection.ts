/**
 * The connection to the API server, replaceable as a whole. Every request runs on one
 * generation: a `Deno.HttpClient` (its pooled connections) plus a signal that aborts every
 * request still open on it. When the connection is found dead (a liveness ping or a request
 * got no answer in time, a watch stayed silent past its bound) `replace()` starts a new
 * generation and aborts the old one, so every watch and request on it fails at once and is
 * retried over a fresh connection — there is no waiting for TCP to notice a peer that vanished
 * without FIN or RST (a powered-off host, a control-plane VIP that moved).
 *
 * HTTPS runs over HTTP/2 only, as client-go does: one multiplexed connection carries every
 * watch and request, so a ping over it proves or disproves all of them at once. (Deno's native
 * fetch speaks HTTP/2 through hyper; the node:http2 crash of denoland/deno#36788 is in the
 * node-compat layer, which this transport does not use.) Plain `http://` URLs (tests) use
 * HTTP/1.1.
 *
 * Requests that carry a body (PUT, POST, PATCH) go over a second client of the generation that
 * speaks HTTP/1.1. Deno's fetch leaves Nagle's algorithm on (no TCP_NODELAY, denoland/deno#35581)
 * and its HTTP/2 client may write a request's HEADERS and DATA frames in two writes whenever the
 * JS thread runs in between; the DATA then waits for the server's delayed ACK of the HEADERS:
 * 40 ms per write (measured: an initialization PUT at 46 ms instead of 3 ms). HTTP/1.1 writes a
 * request's head and body at once. Watches, lists, reads and the liveness pings stay on the one
 * HTTP/2 connection; a stalled write is ended by its deadline, which replaces both clients.
 *
 * @module
 */
import { Counter, type Registry } from "prom-client";
import { logger } from "../log/logging.ts";
import { declareOnce } from "../metrics/registry.ts";
import type { ConnectionSettings } from "./kubeconfig.ts";

const log = logger("kube", "connection");

/** Why a connection was replaced (the `reason` label of the replacement counter). */
export type ReplaceReason = "ping-timeout" | "request-deadline" | "watch-silent";

/** The reason a request fails when the connection it ran on was replaced. */
export class ConnectionReplacedError extends Error {
  /** @param message what happened, for logs */
  constructor(message: string) {
    super(message);
    this.name = "ConnectionReplaced";
  }
}

/** The reason a request fails when it got no (complete) answer within its deadline. */
export class RequestTimeoutError extends Error {
  /** @param message what timed out, for logs */
  constructor(message: string) {
    super(message);
    this.name = "RequestTimeout";
  }
}

/** One connection generation. */
export interface ConnectionGeneration {
  /** Increases with every replacement. */
  readonly id: number;
  /** The pooled HTTP client of this generation. */
  readonly client: Deno.HttpClient;
  /** The client for requests with a body (HTTP/1.1 for HTTPS; `client` itself for plain HTTP). */
  readonly writeClient: Deno.HttpClient;
  /** Aborts (with a `ConnectionReplacedError`) when this generation is replaced or closed. */
  readonly signal: AbortSignal;
}

interface Generation extends ConnectionGeneration {
  readonly controller: AbortController;
}

/** A replaceable connection to one API server. */
export class ApiConnection {
  readonly #settings: ConnectionSettings;
  readonly #replacements: Counter<"reason">;
  #current: Generation;
  #closed = false;

  /**
   * @param settings where the API server is and how to reach it
   * @param registry where `keelson_kube_connection_replacements_total` is registered
   * @throws {TypeError} for settings Deno's fetch cannot honour (see `buildClient`)
   */
  constructor(settings: ConnectionSettings, registry: Registry) {
    this.#settings = settings;
    this.#replacements = replacementCounter(registry);
    this.#current = this.#open(1);
  }

  /** The generation new requests run on. */
  get current(): ConnectionGeneration {
    return this.#current;
  }

  /**
   * Replaces the connection unless `generation` was already replaced (several requests on one
   * dead connection each notice it; only the first replaces it).
   * @param generation the id of the generation found dead
   * @param reason the metric label
   * @param detail what was seen, for the log
   * @returns true when this call replaced it
   */
  replace(generation: number, reason: ReplaceReason, detail: string): boolean {
    if (this.#closed || generation !== this.#current.id) return false;
    const old = this.#current;
    this.#current = this.#open(old.id + 1);
    this.#replacements.inc({ reason });
    log.warn(
      "Replacing the connection to {server} ({reason}): {detail}; every watch and request on it " +
        "is retried over a new connection",
      { server: this.#settings.server, reason, detail, generation: this.#current.id },
    );
    old.controller.abort(
      new ConnectionReplacedError(`the connection was replaced (${reason}: ${detail})`),
    );
    closeClients(old);
    return true;
  }

  /** Aborts everything open and closes the pooled connections. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#current.controller.abort(new ConnectionReplacedError("the client was closed"));
    closeClients(this.#current);
  }

  #open(id: number): Generation {
    const controller = new AbortController();
    const client = buildClient(this.#settings);
    const writeClient = new URL(this.#settings.server).protocol === "https:"
      ? buildClient(this.#settings, { forWrites: true })
      : client;
    return { id, client, writeClient, controller, signal: controller.signal };
  }
}

function closeClients(generation: Generation): void {
  generation.client.close();
  if (generation.writeClient !== generation.client) generation.writeClient.close();
}

/**
 * One Deno HttpClient: HTTP/2 only for HTTPS (one multiplexed connection), HTTP/1.1 for plain
 * HTTP and for an HTTPS client `forWrites` (requests with a body, see the module comment).
 * @param settings the connection settings
 * @param options `forWrites`: HTTP/1.1 only
 * @returns the client
 * @throws {TypeError} for a TLS server name other than the URL's host, or skip-verify
 */
export function buildClient(
  settings: ConnectionSettings,
  options: { forWrites?: boolean } = {},
): Deno.HttpClient {
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
  const https = new URL(settings.server).protocol === "https:";
  const base: Deno.CreateHttpClientOptions = https && !options.forWrites
    ? { http1: false, http2: true }
    : { http1: true, http2: false };
  if (settings.caPem) base.caCerts = [settings.caPem];
  return settings.clientCertPem && settings.clientKeyPem
    ? Deno.createHttpClient({ ...base, cert: settings.clientCertPem, key: settings.clientKeyPem })
    : Deno.createHttpClient(base);
}

function replacementCounter(registry: Registry): Counter<"reason"> {
  const name = "keelson_kube_connection_replacements_total";
  return declareOnce(registry, name, () =>
    new Counter({
      name,
      help: "Connections to the API server found dead and replaced, by reason " +
        "(ping-timeout, request-deadline, watch-silent).",
      labelNames: ["reason"],
      registers: [registry],
    }));
}
