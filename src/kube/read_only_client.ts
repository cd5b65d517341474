/**
 * A client that can only read: one page of a collection per call, always a GET. Commands that
 * must never change a cluster (`keelson plan --kubeconfig`) get this type and nothing else, so a
 * write cannot be written by mistake: there is no method to call, and the transport it wraps is
 * out of reach.
 *
 * @module
 */
import { errorMessageWithCause } from "../log/error_message.ts";
import type { Registry } from "prom-client";
import { isAbortError, statusError } from "./api_error.ts";
import { createHttpTransport, type HttpTransport } from "./http_transport.ts";
import type { ConnectionSettings } from "./kubeconfig.ts";
import { KubeApiError } from "./ports.ts";

/** One page of a list. */
export interface ListPage {
  /** The page's items, plain JSON, untrusted. */
  items: unknown[];
  /** The token of the next page; undefined on the last page. */
  continueToken: string | undefined;
}

/** Options of `ReadOnlyKubeClient.listPage`. */
export interface ListPageOptions {
  /** The page size (`limit`). */
  limit: number;
  /** The `continue` token from the previous page. */
  continueToken?: string;
  /** Aborts the request. */
  signal?: AbortSignal;
}

/** The read-only port: GET one page of a collection. */
export interface ReadOnlyKubeClient {
  /** Where the connection settings came from, e.g. `kubeconfig "/x" context "y"`. */
  readonly source: string;
  /**
   * GETs one page of a collection.
   * @param path e.g. `/api/v1/nodes`
   * @param options page size, continue token, signal
   * @returns the page
   * @throws {KubeApiError} on an HTTP error (410 Gone: the continue token expired) or a network
   *   error (code 0); the signal's reason on abort
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
 * The read-only client over a transport (tests give a fake one).
 * @param transport only its `fetch` (always without a method: GET) and `close` are used
 * @param source where the settings came from
 * @returns the client
 */
export function readOnlyClientOver(
  transport: Pick<HttpTransport, "fetch" | "close">,
  source: string,
): ReadOnlyKubeClient {
  return {
    source,
    listPage: async (path, options) => {
      const query = new URLSearchParams({ limit: String(options.limit) });
      if (options.continueToken) query.set("continue", options.continueToken);
      const what = `list ${path}`;
      const signal = options.signal;
      let status: number, text: string, retryAfter: string | null;
      try {
        const response = await transport.fetch(`${path}?${query}`, { signal: signal ?? null });
        status = response.status;
        retryAfter = response.headers.get("retry-after");
        text = await response.text();
      } catch (error) {
        if (isAbortError(error) || signal?.aborted) throw error;
        throw new KubeApiError(`Cannot ${what}: ${errorMessageWithCause(error)}`, {
          code: 0,
          cause: error,
        });
      }
      if (status !== 200) throw statusError(status, text, retryAfter, what);
      let list: unknown;
      try {
        list = JSON.parse(text);
      } catch (error) {
        throw new KubeApiError(`Cannot ${what}: the answer is not JSON`, {
          code: 200,
          cause: error,
        });
      }
      const body = isRecord(list) ? list : {};
      const items = body.items ?? [];
      if (!Array.isArray(items)) {
        throw new KubeApiError(`Cannot ${what}: the answer's items is not a list`, { code: 200 });
      }
      const metadata = isRecord(body.metadata) ? body.metadata : {};
      const next = metadata.continue;
      return { items, continueToken: typeof next === "string" && next !== "" ? next : undefined };
    },
    close: () => transport.close(),
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
