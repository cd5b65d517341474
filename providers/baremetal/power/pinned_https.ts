/**
 * One HTTPS request to a server whose certificate is pinned by its SHA-256 fingerprint instead of
 * verified against a CA: the TLS handshake is completed first (node:tls, no chain or name check),
 * the peer's leaf certificate compared with the pin, and only on an exact match is the HTTP/1.1
 * request (and with it any credential) written to that socket. A mismatch closes the socket
 * without writing a byte of HTTP.
 *
 * This is how a BMC with a self-signed certificate is trusted — including one marked as a CA
 * (`basicConstraints CA:TRUE`), which Deno's verifier refuses as its own server certificate. Deno's
 * `fetch` cannot do it: it never shows the peer certificate to the caller.
 *
 * @module
 */
import http from "node:http";
import { isIP } from "node:net";
import tls from "node:tls";

/** The peer's certificate is not the pinned one, or the TLS handshake failed. */
export class PinnedTlsError extends Error {
  /**
   * @param message what was presented, or why the handshake failed
   * @param options the cause
   */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "PinnedTlsError";
  }
}

/** The server answered more than the caller's bound. */
export class ResponseTooLargeError extends Error {
  /** @param maxBytes the bound */
  constructor(maxBytes: number) {
    super(`the answer is larger than ${maxBytes} bytes`);
    this.name = "ResponseTooLargeError";
  }
}

/** One request over a pinned connection. */
export interface PinnedRequest {
  /** `https://host[:port]/path`. */
  url: URL;
  method: "GET" | "POST";
  /** Request headers (`host` is set from the URL). */
  headers: Record<string, string>;
  body?: string;
  /** The leaf certificate's SHA-256 fingerprint: 32 upper-case hex pairs joined by ':'. */
  certificateSha256: string;
  /** The most body bytes read. */
  maxBodyBytes: number;
  /** Aborts the connection, the handshake or the exchange; the promise rejects with its reason. */
  signal: AbortSignal;
}

/** What the server answered. */
export interface PinnedResponse {
  status: number;
  body: Uint8Array;
}

/**
 * Connects, checks the pin, sends one request with `Connection: close` and reads the answer.
 * @param request the URL, method, headers, pin, bound and signal
 * @returns the status and the body
 * @throws {PinnedTlsError} when the handshake failed or the certificate is not the pinned one
 * @throws {ResponseTooLargeError} when the body exceeds `maxBodyBytes`
 * @throws the signal's reason when aborted, or a node:net error (e.g. ECONNREFUSED)
 */
export async function pinnedHttpsRequest(request: PinnedRequest): Promise<PinnedResponse> {
  const socket = await connectPinned(request);
  return await exchange(socket, request);
}

function connectPinned(request: PinnedRequest): Promise<tls.TLSSocket> {
  const { url, signal } = request;
  signal.throwIfAborted();
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  const socket = tls.connect({
    host,
    port: url.port === "" ? 443 : Number(url.port),
    // SNI carries names only, never an IP address
    ...(isIP(host) === 0 ? { servername: host } : {}),
    // the chain and name are not what is trusted here: the exact certificate is, checked below
    rejectUnauthorized: false,
    ALPNProtocols: ["http/1.1"],
  });
  // an error between the handshake and node:http taking the socket over (or after the answer)
  // must not become an uncaught exception; the listeners below and node:http's still see it
  socket.on("error", () => {});
  return new Promise((resolve, reject) => {
    const onAbort = () => fail(signal.reason);
    const onError = (error: Error) => {
      const code = (error as { code?: unknown }).code;
      fail(
        typeof code === "string" && code.startsWith("ERR_SSL") ||
          /ssl|tls|handshake|certificate/i.test(error.message)
          ? new PinnedTlsError(`the TLS handshake failed (${error.message})`, { cause: error })
          : error,
      );
    };
    const onClose = () => fail(new Error("the connection closed during the TLS handshake"));
    const cleanup = () => {
      signal.removeEventListener("abort", onAbort);
      socket.off("error", onError);
      socket.off("close", onClose);
      socket.off("secureConnect", onSecure);
    };
    function fail(reason: unknown) {
      cleanup();
      socket.destroy();
      reject(reason);
    }
    function onSecure() {
      cleanup();
      const presented = socket.getPeerCertificate()?.fingerprint256;
      if (presented !== request.certificateSha256) {
        socket.destroy();
        reject(
          new PinnedTlsError(
            `the certificate presented has SHA-256 fingerprint ${
              typeof presented === "string" && presented !== "" ? presented : "(none)"
            }, not certificate_sha256 ${request.certificateSha256}`,
          ),
        );
        return;
      }
      resolve(socket);
    }
    signal.addEventListener("abort", onAbort, { once: true });
    socket.once("error", onError);
    socket.once("close", onClose);
    socket.once("secureConnect", onSecure);
  });
}

function exchange(socket: tls.TLSSocket, request: PinnedRequest): Promise<PinnedResponse> {
  const { url, signal } = request;
  return new Promise((resolve, reject) => {
    let settled = false;
    const finish = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener("abort", onAbort);
      outcome();
    };
    const fail = (reason: unknown) =>
      finish(() => {
        outgoing.destroy();
        socket.destroy();
        reject(reason);
      });
    const onAbort = () => fail(signal.reason);
    const outgoing = http.request({
      method: request.method,
      path: `${url.pathname}${url.search}`,
      headers: {
        ...request.headers,
        host: url.host,
        connection: "close",
        ...(request.body === undefined
          ? {}
          : { "content-length": String(new TextEncoder().encode(request.body).byteLength) }),
      },
      // the verified socket, not a new connection (with `agent: false` Deno's node:http would
      // ignore createConnection and dial port 80 itself)
      createConnection: () => socket,
    }, (response) => {
      const chunks: Uint8Array[] = [];
      let size = 0;
      response.on("data", (chunk: Uint8Array) => {
        size += chunk.byteLength;
        if (size > request.maxBodyBytes) {
          fail(new ResponseTooLargeError(request.maxBodyBytes));
          return;
        }
        chunks.push(chunk);
      });
      response.once("error", fail);
      response.once("aborted", () => fail(new Error("the connection closed mid-answer")));
      response.once("end", () =>
        finish(() => {
          socket.destroy();
          const body = new Uint8Array(size);
          let offset = 0;
          for (const chunk of chunks) {
            body.set(chunk, offset);
            offset += chunk.byteLength;
          }
          resolve({ status: response.statusCode ?? 0, body });
        }));
    });
    outgoing.once("error", fail);
    // a node:http that dialled its own connection would send the credentials unverified; the
    // "socket" event comes before anything is written to it
    outgoing.once("socket", (used) => {
      if (used !== socket) {
        (used as { destroy(): void }).destroy();
        fail(new PinnedTlsError("node:http did not use the verified connection; nothing was sent"));
      }
    });
    signal.addEventListener("abort", onAbort, { once: true });
    if (signal.aborted) onAbort();
    else outgoing.end(request.body);
  });
}
