/**
 * Runs the app on `Deno.serve`: plain HTTP, or HTTPS when a certificate and key are given (the
 * upstream CCM serves only HTTPS on :10258; Keelson defaults to HTTP on loopback).
 *
 * @module
 */
import type { Hono } from "hono";
import { readTlsKeyPair, TlsKeyPairError } from "../config/tls_key_pair.ts";
import { logger } from "../log/logging.ts";
import { errorMessage } from "../log/error_message.ts";

/** Options of `serve`. */
export interface ServeOptions {
  /** `host:port`, `[v6]:port` or `:port` (all IPv4 interfaces); port 0 picks a free one. */
  listen: string;
  /** PEM certificate chain file; with `keyFile`, serve HTTPS. */
  certFile?: string;
  /** PEM private key file. */
  keyFile?: string;
  /** Stops the server (in-flight requests finish first). */
  signal: AbortSignal;
}

/** A running server. */
export interface Serving {
  /** The bound address (the real port when 0 was asked). */
  addr: Deno.NetAddr;
  /** The base URL, e.g. `https://[::1]:10258`. */
  url: string;
  /** Resolves once the server has stopped after `signal` aborted. */
  finished: Promise<void>;
}

/**
 * Starts serving `app`; resolves once the socket is bound.
 * @param app the Hono app from `createServer`
 * @param options address, TLS files, stop signal
 * @returns the bound address and a promise of the end
 * @throws {TypeError} when `listen` is not host:port, or only one of certFile and keyFile is set
 * @throws {Error} naming the certificate or key file when the pair cannot be served with
 *   (`readTlsKeyPair`: unreadable, swapped, encrypted, not parseable, not a matching pair)
 * @throws {Deno.errors.AddrInUse} when the port is taken
 */
export async function serve(app: Hono, options: ServeOptions): Promise<Serving> {
  const { hostname, port } = parseListen(options.listen);
  if ((options.certFile === undefined) !== (options.keyFile === undefined)) {
    throw new TypeError(
      "Cannot serve HTTPS: certFile and keyFile must be given together " +
        `(certFile ${JSON.stringify(options.certFile ?? "")}, keyFile ${
          JSON.stringify(options.keyFile ?? "")
        })`,
    );
  }
  const tls = options.certFile && options.keyFile
    ? await readTlsKeyPair(options.certFile, options.keyFile).catch((error) => {
      const field = error instanceof TlsKeyPairError ? ` ${error.field}` : "";
      throw new Error(`[server]${field} ${errorMessage(error)}`, { cause: error });
    })
    : undefined;
  const log = logger("server");
  const server = Deno.serve({
    hostname,
    port,
    signal: options.signal,
    ...(tls ?? {}),
    onListen: () => {},
  }, app.fetch);
  const addr = server.addr;
  const host = addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname;
  const url = `${tls ? "https" : "http"}://${host}:${addr.port}`;
  log.info("Serving health and metrics on {url}", { url });
  return { addr, url, finished: server.finished };
}

/**
 * Splits `host:port`, `[v6]:port` or `:port`.
 * @param listen the address
 * @returns hostname (brackets removed) and port
 * @throws {TypeError} when the address is malformed or the port is outside 0–65535
 */
export function parseListen(listen: string): { hostname: string; port: number } {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(listen);
  const port = Number(match?.[3]);
  if (!match || port > 65535) {
    throw new TypeError(
      `Cannot listen on ${JSON.stringify(listen)}: expected host:port with a port 0-65535, ` +
        "e.g. 127.0.0.1:10258, [::1]:10258 or :10258",
    );
  }
  return { hostname: match[1] ?? (match[2] || "0.0.0.0"), port };
}
