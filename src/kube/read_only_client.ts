/**
 * A read-only view of the one REST client (`rest_api.ts`): one page of a collection per call,
 * always a GET, through the same request, error, JSON and body-bound path as every other call.
 * Commands that must never change a cluster (`keelson plan --kubeconfig`, `keelson import`) get
 * this type and nothing else, so a write cannot be written by mistake: there is no method to call,
 * and the REST client and transport it wraps are out of reach.
 *
 * @module
 */
import type { Registry } from "prom-client";
import { createHttpTransport, type HttpTransport } from "./http_transport.ts";
import type { ConnectionSettings } from "./kubeconfig.ts";
import { createRestApi, type ListPage, type ListPageOptions } from "./rest_api.ts";

export type { ListPage, ListPageOptions };

/** The read-only port: GET one page of a collection. */
export interface ReadOnlyKubeClient {
  /** Where the connection settings came from, e.g. `kubeconfig "/x" context "y"`. */
  readonly source: string;
  /**
   * GETs one page of a collection (`RestApi.listPage`).
   * @param path e.g. `/api/v1/nodes`
   * @param options page size, continue token, signal
   * @returns the page
   * @throws {KubeApiError} on an HTTP error (410 Gone: the continue token expired), a network
   *   error or a body past its cap (code 0); the signal's reason on abort
   */
  listPage(path: string, options: ListPageOptions): Promise<ListPage>;
  /** Closes the connections. */
  close(): void;
}

/** Options of `createReadOnlyKubeClient`. */
export interface ReadOnlyClientOptions {
  /** Where the transport's `rest_client_*` metrics go (a throw-away registry for a command). */
  registry: Registry;
  /** The User-Agent. */
  userAgent: string;
  /** The deadline of each request, in ms. */
  requestTimeoutMs: number;
}

/**
 * The read-only client over one set of connection settings. No liveness pings: every request
 * has its own deadline and the command ends after a handful of them.
 * @param settings from `resolveConnectionSettings`
 * @param options metrics registry, User-Agent, request deadline
 * @returns the client
 */
export function createReadOnlyKubeClient(
  settings: ConnectionSettings,
  options: ReadOnlyClientOptions,
): ReadOnlyKubeClient {
  const transport = createHttpTransport(settings, {
    registry: options.registry,
    userAgent: options.userAgent,
    requestTimeoutMs: options.requestTimeoutMs,
    pingIntervalMs: 0,
  });
  return readOnlyClientOver(transport, settings.source);
}

/**
 * The read-only view of a REST client over a transport (tests give a fake one).
 * @param transport only its `fetch` (always a GET) and `close` are used
 * @param source where the settings came from
 * @returns the client
 */
export function readOnlyClientOver(
  transport: Pick<HttpTransport, "fetch" | "close">,
  source: string,
): ReadOnlyKubeClient {
  const rest = createRestApi(transport);
  return {
    source,
    listPage: (path, options) => rest.listPage(path, options),
    close: () => transport.close(),
  };
}
