/**
 * A small Redfish client for one BMC: reads a ComputerSystem's `PowerState` and sends
 * `ComputerSystem.Reset` with `ForceOff`. Session-less basic authentication over HTTPS only,
 * the BMC's certificate checked against the inventory's `ca_file` (or the system's roots) or,
 * with `certificate_sha256`, compared with that pin before any request is written
 * (`pinned_https.ts`), a deadline on every request, a bounded body, and one validation path (zod)
 * for what comes back.
 *
 * A reading is `on` or `off` only when the BMC answered a ComputerSystem whose `PowerState` is
 * exactly `"On"` or `"Off"`; everything else — `PoweringOff`, `PoweringOn`, `Paused`, null, an
 * unreachable BMC, a timeout, refused credentials, a certificate that does not verify, an answer
 * that is not Redfish — is `unknown`, with the reason. A machine that is powering off is not off
 * yet: it may still write to its disks.
 *
 * @module
 */
import { z } from "zod";
import type { BmcCredentials } from "../../../src/config/bmc_credentials.ts";
import { pinnedHttpsRequest, PinnedTlsError, ResponseTooLargeError } from "./pinned_https.ts";

/** The largest body read from a BMC (a ComputerSystem is a few KiB). */
export const MAX_REDFISH_BODY_BYTES = 1024 * 1024;

/** The most systems a collection is searched through when `system` is not given. */
export const MAX_DISCOVERED_SYSTEMS = 16;

/** Why a BMC gave no usable answer (the `reason` label of `keelson_bmc_request_errors_total`). */
export type RedfishFailure =
  | "credentials"
  | "unreachable"
  | "timeout"
  | "tls"
  | "unauthorized"
  | "http_error"
  | "not_redfish"
  | "no_system";

/** Every failure reason, for declaring metrics. */
export const REDFISH_FAILURES: readonly RedfishFailure[] = [
  "credentials",
  "unreachable",
  "timeout",
  "tls",
  "unauthorized",
  "http_error",
  "not_redfish",
  "no_system",
];

/** A request that got no usable answer. */
export class RedfishError extends Error {
  /** The kind of failure. */
  readonly reason: RedfishFailure;

  /**
   * @param reason the kind of failure
   * @param message what happened, naming the URL
   * @param options the cause
   */
  constructor(reason: RedfishFailure, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "RedfishError";
    this.reason = reason;
  }
}

/** What one read of a system's power gave. */
export interface PowerReading {
  /** `on`/`off` only for exactly "On"/"Off". */
  state: "on" | "off" | "unknown";
  /** E.g. `PowerState "Off"`, `PowerState "PoweringOff" (not off yet)`. */
  detail: string;
  /** The system's path the answer came from. */
  system: string;
}

const ResetActionSchema = z.object({
  target: z.string().max(512).optional(),
  "ResetType@Redfish.AllowableValues": z.array(z.string().max(64)).max(32).optional(),
});

/** What Keelson reads of a ComputerSystem; anything else in it is ignored. */
const ComputerSystemSchema = z.object({
  "@odata.type": z.string().max(256).regex(
    /^#ComputerSystem\./,
    "is not a ComputerSystem",
  ),
  SerialNumber: z.string().max(256).nullable().optional(),
  PowerState: z.unknown().optional(),
  Actions: z.object({ "#ComputerSystem.Reset": ResetActionSchema.optional() }).optional(),
});

const CollectionSchema = z.object({
  Members: z.array(z.object({ "@odata.id": z.string().max(512) })).max(10_000),
});

type ComputerSystem = z.infer<typeof ComputerSystemSchema>;

/** Where one BMC is and how to reach it. */
export interface RedfishTarget {
  /** The BMC's base URL, `https://host[:port]`. */
  endpoint: string;
  /** The system's path; undefined: discovered (the only system, or the one with `serial`). */
  system?: string;
  /** The machine's id, matched against `SerialNumber` when several systems exist. */
  serial: string;
  /** The deadline of each request. */
  timeoutMs: number;
  /**
   * The BMC's leaf certificate's SHA-256 fingerprint (upper-case hex pairs joined by ':'): when
   * set, that exact certificate is trusted instead of a CA, and requests go through node:tls.
   */
  certificateSha256?: string;
}

/** Deno HTTP clients by CA text: one TLS configuration per distinct CA. */
const clients = new Map<string, Deno.HttpClient>();
/** More distinct CAs than this (rotated files) and the oldest client is closed. */
const MAX_CLIENTS = 256;

function httpClient(caPem: string | undefined): Deno.HttpClient | undefined {
  if (caPem === undefined) return undefined;
  let client = clients.get(caPem);
  if (client === undefined) {
    // a BMC serves one connection badly enough; HTTP/1.1 as every BMC speaks it
    client = Deno.createHttpClient({ caCerts: [caPem], http2: false });
    clients.set(caPem, client);
    if (clients.size > MAX_CLIENTS) {
      const [oldest, stale] = clients.entries().next().value!;
      clients.delete(oldest);
      // a request still using it fails and is retried at the next poll
      stale.close();
    }
  }
  return client;
}

/**
 * Sends one request and returns the parsed JSON body (undefined for 204).
 * @throws {RedfishError} for every failure
 */
async function request(
  target: RedfishTarget,
  credentials: BmcCredentials,
  method: "GET" | "POST",
  path: string,
  signal: AbortSignal,
  body?: unknown,
): Promise<unknown> {
  const url = `${target.endpoint.replace(/\/$/, "")}${path}`;
  const deadline = AbortSignal.timeout(target.timeoutMs);
  const combined = AbortSignal.any([signal, deadline]);
  const headers = {
    authorization: `Basic ${btoa(`${credentials.username}:${credentials.password}`)}`,
    accept: "application/json",
    ...(body === undefined ? {} : { "content-type": "application/json" }),
  };
  const text = body === undefined ? undefined : JSON.stringify(body);
  const deadlines = { combined, deadline, signal, timeoutMs: target.timeoutMs };
  const { status, bytes } = target.certificateSha256 === undefined
    ? await fetchVerified(url, method, headers, text, credentials.caPem, deadlines)
    : await fetchPinned(url, method, headers, text, target.certificateSha256, deadlines);
  if (status === 401 || status === 403) {
    throw new RedfishError(
      "unauthorized",
      `${method} ${url}: HTTP ${status} (the BMC refused the credentials of ` +
        "username_file/password_file)",
    );
  }
  if (status === 204 && method === "POST") return undefined;
  if (status < 200 || status > 299) {
    throw new RedfishError("http_error", `${method} ${url}: HTTP ${status}`);
  }
  if (method === "POST") return undefined;
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    throw new RedfishError("not_redfish", `GET ${url}: the answer is not JSON`);
  }
}

/** The caller's signal, the request's deadline, both combined, and the deadline's length. */
interface Deadlines {
  combined: AbortSignal;
  deadline: AbortSignal;
  signal: AbortSignal;
  timeoutMs: number;
}

/** The request through Deno's fetch, the certificate verified against `caPem` or the roots. */
async function fetchVerified(
  url: string,
  method: "GET" | "POST",
  headers: Record<string, string>,
  body: string | undefined,
  caPem: string | undefined,
  deadlines: Deadlines,
): Promise<{ status: number; bytes: Uint8Array }> {
  const { combined, deadline, signal, timeoutMs } = deadlines;
  const client = httpClient(caPem);
  let response: Response;
  try {
    response = await fetch(url, {
      method,
      headers,
      body,
      redirect: "manual",
      signal: combined,
      ...(client ? { client } : {}),
    });
  } catch (error) {
    throw transportError(url, error, deadline, signal, timeoutMs);
  }
  try {
    return { status: response.status, bytes: await readBounded(response, url) };
  } catch (error) {
    if (error instanceof RedfishError) throw error;
    throw transportError(url, error, deadline, signal, timeoutMs);
  }
}

/** The request over a node:tls socket whose certificate matched the pin. */
async function fetchPinned(
  url: string,
  method: "GET" | "POST",
  headers: Record<string, string>,
  body: string | undefined,
  certificateSha256: string,
  deadlines: Deadlines,
): Promise<{ status: number; bytes: Uint8Array }> {
  const { combined, deadline, signal, timeoutMs } = deadlines;
  try {
    const response = await pinnedHttpsRequest({
      url: new URL(url),
      method,
      headers,
      ...(body === undefined ? {} : { body }),
      certificateSha256,
      maxBodyBytes: MAX_REDFISH_BODY_BYTES,
      signal: combined,
    });
    return { status: response.status, bytes: response.body };
  } catch (error) {
    if (error instanceof ResponseTooLargeError) {
      throw new RedfishError("not_redfish", `${url}: ${error.message}`);
    }
    if (error instanceof PinnedTlsError && !signal.aborted && !deadline.aborted) {
      throw new RedfishError("tls", `${url}: ${error.message}`, { cause: error });
    }
    const failure = transportError(url, error, deadline, signal, timeoutMs);
    // a node:net error names no certificate; anything else was the connection
    if (failure instanceof RedfishError && failure.reason === "tls") {
      throw new RedfishError("unreachable", `${url}: ${oneLine(String(error))}`, {
        cause: error,
      });
    }
    throw failure;
  }
}

async function readBounded(response: Response, url: string): Promise<Uint8Array> {
  const reader = response.body?.getReader();
  if (!reader) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let size = 0;
  while (true) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_REDFISH_BODY_BYTES) {
      await reader.cancel().catch(() => {});
      throw new RedfishError(
        "not_redfish",
        `${url}: the answer is larger than ${MAX_REDFISH_BODY_BYTES} bytes`,
      );
    }
    chunks.push(value);
  }
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

/** A transport failure that is the peer hanging up (rustls, hyper or node:http wording). */
const HUNG_UP =
  /closed connection|connection closed|close_notify|IncompleteMessage|connection reset|ECONNRESET|socket hang up/i;

function transportError(
  url: string,
  error: unknown,
  deadline: AbortSignal,
  signal: AbortSignal,
  timeoutMs: number,
): RedfishError | unknown {
  if (signal.aborted) return signal.reason ?? error;
  if (deadline.aborted) {
    return new RedfishError("timeout", `${url}: no answer within ${timeoutMs / 1000} s`);
  }
  const text = `${String(error)} ${String((error as { cause?: unknown })?.cause ?? "")}`;
  if (/certificate|UnknownIssuer|NotValidForName|CaUsedAsEndEntity/i.test(text)) {
    return new RedfishError(
      "tls",
      `${url}: the BMC's certificate does not verify against ca_file (${oneLine(text)})`,
      { cause: error },
    );
  }
  // rustls names TLS in "peer closed connection without sending TLS close_notify": a peer that
  // hung up, not a certificate that failed
  if (HUNG_UP.test(text)) {
    return new RedfishError(
      "unreachable",
      `${url}: the BMC closed the connection without answering (${oneLine(text)})`,
      { cause: error },
    );
  }
  if (/tls|handshake/i.test(text)) {
    return new RedfishError(
      "tls",
      `${url}: the TLS handshake with the BMC failed (${oneLine(text)})`,
      { cause: error },
    );
  }
  return new RedfishError("unreachable", `${url}: ${oneLine(text)}`, { cause: error });
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim().slice(0, 300);
}

function parseSystem(value: unknown, url: string): ComputerSystem {
  const parsed = ComputerSystemSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new RedfishError(
      "not_redfish",
      `GET ${url}: not a Redfish ComputerSystem (${issue?.path.join(".") || "body"} ${
        issue?.message ?? ""
      })`.replace(/ \)$/, ")"),
    );
  }
  return parsed.data;
}

/** Maps a Redfish `PowerState` to Keelson's three states; only exact "Off" is off. */
export function powerStateOf(value: unknown): { state: PowerReading["state"]; detail: string } {
  if (value === "On") return { state: "on", detail: 'PowerState "On"' };
  if (value === "Off") return { state: "off", detail: 'PowerState "Off"' };
  const shown = typeof value === "string"
    ? `"${value.slice(0, 32).replace(/[^\x20-\x7e]/g, "?")}"`
    : value === undefined
    ? "absent"
    : value === null
    ? "null"
    : "not a string";
  const why = value === "PoweringOff"
    ? " (not off yet)"
    : value === "PoweringOn" || value === "Paused"
    ? ""
    : " (not a power state Keelson acts on)";
  return { state: "unknown", detail: `PowerState ${shown}${why}` };
}

/** One BMC's Redfish API. */
export class RedfishClient {
  readonly #target: RedfishTarget;
  #discovered: string | undefined;

  /** @param target the BMC, the system and the deadline */
  constructor(target: RedfishTarget) {
    this.#target = target;
  }

  /**
   * Reads the system's power.
   * @param credentials the user, password and CA
   * @param signal aborts the request
   * @returns the reading (`unknown` for a PowerState other than On/Off)
   * @throws {RedfishError} when the BMC gave no usable answer
   */
  async readPower(credentials: BmcCredentials, signal: AbortSignal): Promise<PowerReading> {
    const { path, system } = await this.#system(credentials, signal);
    return { ...powerStateOf(system.PowerState), system: path };
  }

  /**
   * Sends `ComputerSystem.Reset` with `ResetType: "ForceOff"`, to the target the system names
   * (or the standard one), after checking `ForceOff` is among the allowed values when listed.
   * @param credentials the user, password and CA
   * @param signal aborts the request
   * @throws {RedfishError} when the BMC refused or gave no usable answer
   */
  async forceOff(credentials: BmcCredentials, signal: AbortSignal): Promise<void> {
    const { path, system } = await this.#system(credentials, signal);
    const action = system.Actions?.["#ComputerSystem.Reset"];
    const allowed = action?.["ResetType@Redfish.AllowableValues"];
    if (allowed !== undefined && !allowed.includes("ForceOff")) {
      throw new RedfishError(
        "http_error",
        `${path}: the system does not allow ResetType "ForceOff" (allowed: ${
          allowed.slice(0, 8).join(", ")
        })`,
      );
    }
    const target = action?.target?.startsWith(`${path}/`)
      ? action.target
      : `${path}/Actions/ComputerSystem.Reset`;
    await request(this.#target, credentials, "POST", target, signal, { ResetType: "ForceOff" });
  }

  async #system(
    credentials: BmcCredentials,
    signal: AbortSignal,
  ): Promise<{ path: string; system: ComputerSystem }> {
    const path = this.#target.system ?? this.#discovered ??
      await this.#discover(credentials, signal);
    const url = `${this.#target.endpoint}${path}`;
    try {
      return {
        path,
        system: parseSystem(
          await request(this.#target, credentials, "GET", path, signal),
          url,
        ),
      };
    } catch (error) {
      // a discovered path is looked for again after any failure (the BMC may have renumbered)
      this.#discovered = undefined;
      throw error;
    }
  }

  async #discover(credentials: BmcCredentials, signal: AbortSignal): Promise<string> {
    const url = `${this.#target.endpoint}/redfish/v1/Systems`;
    const collection = CollectionSchema.safeParse(
      await request(this.#target, credentials, "GET", "/redfish/v1/Systems", signal),
    );
    if (!collection.success) {
      throw new RedfishError("not_redfish", `GET ${url}: not a Redfish collection`);
    }
    const members = collection.data.Members.map((m) => m["@odata.id"])
      .filter((id) => /^\/redfish\/v1\/Systems\/[A-Za-z0-9._~:@-]{1,128}$/.test(id));
    if (members.length === 1) return this.#discovered = members[0]!;
    const matching: string[] = [];
    for (const member of members.slice(0, MAX_DISCOVERED_SYSTEMS)) {
      const system = parseSystem(
        await request(this.#target, credentials, "GET", member, signal),
        `${this.#target.endpoint}${member}`,
      );
      if (system.SerialNumber === this.#target.serial) matching.push(member);
    }
    if (matching.length === 1) return this.#discovered = matching[0]!;
    throw new RedfishError(
      "no_system",
      `GET ${url}: ${members.length} systems, ${matching.length} with SerialNumber "${this.#target.serial}" ` +
        "(the machine's id); set system in [machines.bmc]",
    );
  }
}
