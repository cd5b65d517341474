/**
 * A small Redfish client for one BMC: reads a ComputerSystem's `PowerState` and sends
 * `ComputerSystem.Reset` with `ForceOff`. Session-less basic authentication over HTTPS only,
 * the BMC's certificate checked against the inventory's `ca_file` (or the system's roots) or,
 * with `certificate_sha256`, compared with that pin before any request is written
 * (`pinned_https.ts`), a deadline on every request, a bounded body, and one validation path (zod)
 * for what comes back.
 *
 * Every request goes to one of a few paths Keelson builds itself from checked parts: the Systems
 * collection (and its next pages), a system whose id is one safe path segment
 * (`src/config/bmc_system_path.ts`), and that system's `Actions/ComputerSystem.Reset`; the URL is
 * checked again after the parser has resolved it, and a path a BMC hands back (a member, a next
 * page, a reset target) that would resolve anywhere else is refused, never followed. A system is
 * this machine's only when what it reports of itself does not contradict the machine's id
 * (`system_identity.ts`); discovery reads every member and takes the one that reports the id, or
 * the only member when it reports nothing.
 *
 * A reading is `on` or `off` only when the BMC answered a ComputerSystem whose `PowerState` is
 * exactly `"On"` or `"Off"`; everything else — `PoweringOff`, `PoweringOn`, `Paused`, null, an
 * unreachable BMC, a timeout, refused credentials, a certificate that does not verify, an answer
 * that is not Redfish — is `unknown`, with the reason. A machine that is powering off is not off
 * yet: it may still write to its disks.
 *
 * @module
 */
import * as z from "zod/v4";
import type { BmcCredentials } from "../../../src/config/bmc_credentials.ts";
import { parseSystemPath, SYSTEMS_COLLECTION_PATH } from "../../../src/config/bmc_system_path.ts";
import { pinnedHttpsRequest, PinnedTlsError, ResponseTooLargeError } from "./pinned_https.ts";
import { judgeIdentity, quote } from "./system_identity.ts";

/** The largest body read from a BMC (a ComputerSystem is a few KiB). */
export const MAX_REDFISH_BODY_BYTES = 1024 * 1024;

/**
 * The most systems discovery reads when `system` is not given; a BMC that lists more is refused
 * (set `system`), never searched in part.
 */
export const MAX_DISCOVERED_SYSTEMS = 64;

/** The most pages of the Systems collection discovery follows (`Members@odata.nextLink`). */
export const MAX_COLLECTION_PAGES = 16;

/** Why a BMC gave no usable answer (the `reason` label of `keelson_bmc_request_errors_total`). */
export type RedfishFailure =
  | "credentials"
  | "unreachable"
  | "timeout"
  | "tls"
  | "unauthorized"
  | "http_error"
  | "not_redfish"
  | "no_system"
  | "identity"
  | "unsafe_path";

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
  "identity",
  "unsafe_path",
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
  AssetTag: z.string().max(256).nullable().optional(),
  UUID: z.string().max(256).nullable().optional(),
  PowerState: z.unknown().optional(),
  Actions: z.object({ "#ComputerSystem.Reset": ResetActionSchema.optional() }).optional(),
});

const CollectionSchema = z.object({
  Members: z.array(z.object({ "@odata.id": z.string().max(512) })).max(10_000),
  "Members@odata.count": z.number().int().min(0).optional(),
  "Members@odata.nextLink": z.string().max(2048).nullable().optional(),
});

type ComputerSystem = z.infer<typeof ComputerSystemSchema>;

/** Where one BMC is and how to reach it. */
export interface RedfishTarget {
  /** The BMC's base URL, `https://host[:port]`. */
  endpoint: string;
  /**
   * The system's path; undefined: discovered (the one member reporting `serial`, or the only
   * member when it reports no identity).
   */
  system?: string;
  /**
   * The machine's id: a system reporting a `SerialNumber` or `AssetTag` other than it is not
   * this machine's (`system_identity.ts`).
   */
  serial: string;
  /** The machine has no `id`, so `serial` is its name (messages say so). */
  serialIsName?: boolean;
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
 * The URL of `path` (Keelson's own, built from checked parts) on the endpoint's origin, checked
 * after the URL parser resolved it: the same origin, and the path and query exactly as given (no
 * dot segment resolved away, nothing re-encoded). The endpoint's own path, query or fragment is
 * never part of it.
 * @throws {RedfishError} `unsafe_path` when the parser would send the request anywhere else
 */
function requestUrl(endpoint: string, method: string, path: string): string {
  let origin: string;
  let url: URL;
  try {
    origin = new URL(endpoint).origin;
    url = new URL(path, origin);
  } catch {
    throw new RedfishError(
      "unsafe_path",
      `${method} ${quote(path)}: not a URL on ${quote(endpoint)}`,
    );
  }
  if (
    !path.startsWith("/") || url.origin !== origin || `${url.pathname}${url.search}` !== path ||
    url.hash !== ""
  ) {
    throw new RedfishError(
      "unsafe_path",
      `${method} ${quote(path)} on ${origin}: resolves to ${quote(url.href)}; not sent`,
    );
  }
  return url.href;
}

/**
 * The system path a collection member names: `/redfish/v1/Systems/<one safe segment>`, one
 * trailing '/' (as some BMCs write it) dropped.
 */
function memberPath(odataId: string): { path: string } | { problem: string } {
  const bare = odataId.endsWith("/") ? odataId.slice(0, -1) : odataId;
  const parsed = parseSystemPath(bare);
  return "problem" in parsed ? parsed : { path: `${SYSTEMS_COLLECTION_PATH}/${parsed.id}` };
}

// a next page: the collection itself with a query of plain characters (e.g. `?$skip=16`)
const PAGE_PATH =
  /^\/redfish\/v1\/Systems\/?(\?(?:[A-Za-z0-9$=&._~:@,+-]|%[0-9A-Fa-f]{2}){0,512})?$/;

/** The next page's path, when `Members@odata.nextLink` names a page of the Systems collection. */
function pagePath(link: string): { path: string } | { problem: string } {
  return PAGE_PATH.test(link) ? { path: link } : {
    problem: `is not a page of ${SYSTEMS_COLLECTION_PATH} ("${SYSTEMS_COLLECTION_PATH}?<query>")`,
  };
}

/** The standard target of a system's reset (DSP0266: `<resource>/Actions/<Namespace.Action>`). */
export function resetTargetOf(systemPath: string): string {
  return `${systemPath}/Actions/ComputerSystem.Reset`;
}

/**
 * Why a system's advertised `#ComputerSystem.Reset` target is not its standard one, or undefined
 * when it is (after the URL parser resolved dot segments; its host is not looked at, as the
 * action is only ever sent to the configured endpoint). Percent-encoding is never decoded: the
 * standard path holds none, so a target that still holds one after resolution differs.
 */
function resetTargetProblem(target: string, systemPath: string): string | undefined {
  let url: URL;
  try {
    url = new URL(target, "https://bmc.invalid");
  } catch {
    return "is not a URL";
  }
  if (url.search !== "" || url.hash !== "") return "has a query or fragment";
  const standard = resetTargetOf(systemPath);
  if (url.pathname !== standard && url.pathname !== `${standard}/`) {
    return `resolves to ${quote(url.pathname)}, not this system's ${standard}`;
  }
  return undefined;
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
  const url = requestUrl(target.endpoint, method, path);
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

/** A system read and judged: its path and what it said. */
interface ReadSystem {
  path: string;
  system: ComputerSystem;
}

/** One BMC's Redfish API, for one machine's system. */
export class RedfishClient {
  readonly #target: RedfishTarget;
  /** The discovered system, and whether it was chosen by its identity (several members). */
  #discovered: { path: string; byIdentity: boolean } | undefined;

  /** @param target the BMC, the system and the deadline */
  constructor(target: RedfishTarget) {
    this.#target = target;
  }

  /**
   * Reads the system's power.
   * @param credentials the user, password and CA
   * @param signal aborts the request
   * @returns the reading (`unknown` for a PowerState other than On/Off)
   * @throws {RedfishError} when the BMC gave no usable answer, or the system is not provably
   *   this machine's (`identity`, `no_system`, `unsafe_path`)
   */
  async readPower(credentials: BmcCredentials, signal: AbortSignal): Promise<PowerReading> {
    const { path, system } = await this.#system(credentials, signal);
    return { ...powerStateOf(system.PowerState), system: path };
  }

  /**
   * Sends `ComputerSystem.Reset` with `ResetType: "ForceOff"` to the system's standard target
   * `<system>/Actions/ComputerSystem.Reset`, after reading the system again (its identity
   * judged as for a reading) and checking `ForceOff` is among the allowed values when listed.
   * A system that advertises its reset anywhere else is refused, not followed.
   * @param credentials the user, password and CA
   * @param signal aborts the request
   * @throws {RedfishError} when the BMC refused or gave no usable answer, or nothing was sent
   */
  async forceOff(credentials: BmcCredentials, signal: AbortSignal): Promise<void> {
    const { path, system } = await this.#system(credentials, signal);
    const action = system.Actions?.["#ComputerSystem.Reset"];
    const allowed = action?.["ResetType@Redfish.AllowableValues"];
    if (allowed !== undefined && !allowed.includes("ForceOff")) {
      throw new RedfishError(
        "http_error",
        `${path}: the system does not allow ResetType "ForceOff" (allowed: ${
          allowed.slice(0, 8).map(quote).join(", ")
        })`,
      );
    }
    const advertised = action?.target;
    const problem = advertised === undefined ? undefined : resetTargetProblem(advertised, path);
    if (problem !== undefined) {
      throw new RedfishError(
        "unsafe_path",
        `${path}: the system's ComputerSystem.Reset target ${quote(advertised!)} ${problem}; ` +
          "ForceOff not sent",
      );
    }
    await request(this.#target, credentials, "POST", resetTargetOf(path), signal, {
      ResetType: "ForceOff",
    });
  }

  async #system(credentials: BmcCredentials, signal: AbortSignal): Promise<ReadSystem> {
    const configured = this.#target.system;
    if (configured !== undefined) {
      const parsed = parseSystemPath(configured);
      if ("problem" in parsed) {
        throw new RedfishError("unsafe_path", `system ${quote(configured)} ${parsed.problem}`);
      }
      const read = await this.#read(configured, credentials, signal);
      this.#requireIdentity(read, false);
      return read;
    }
    const cached = this.#discovered;
    if (cached === undefined) return await this.#discover(credentials, signal);
    try {
      const read = await this.#read(cached.path, credentials, signal);
      this.#requireIdentity(read, cached.byIdentity);
      return read;
    } catch (error) {
      // looked for again after any failure (the BMC may have renumbered its systems)
      this.#discovered = undefined;
      throw error;
    }
  }

  async #read(path: string, credentials: BmcCredentials, signal: AbortSignal): Promise<ReadSystem> {
    const body = await request(this.#target, credentials, "GET", path, signal);
    return { path, system: parseSystem(body, `${this.#target.endpoint}${path}`) };
  }

  /**
   * @throws {RedfishError} `identity` when the system reports another identity, or (`confirmed`)
   *   no longer reports the machine's id
   */
  #requireIdentity({ path, system }: ReadSystem, confirmed: boolean): void {
    const id = this.#target.serial;
    const verdict = judgeIdentity(system, id);
    if (verdict.kind === "contradicted") {
      throw new RedfishError(
        "identity",
        `${path} reports ${verdict.reported}, not the machine's id ${quote(id)}` +
          (this.#target.serialIsName ? " (its name: no id is set)" : "") +
          ": another machine's system? (id must be the serial number or asset tag the BMC reports)",
      );
    }
    if (confirmed && verdict.kind !== "confirmed") {
      throw new RedfishError(
        "identity",
        `${path} no longer reports the machine's id ${quote(id)}; its systems are read again`,
      );
    }
  }

  /**
   * Reads every member of the Systems collection and takes the one whose identity is the
   * machine's id; or, when the collection has one member that reports no identity, that one.
   */
  async #discover(credentials: BmcCredentials, signal: AbortSignal): Promise<ReadSystem> {
    const url = `${this.#target.endpoint}${SYSTEMS_COLLECTION_PATH}`;
    const id = this.#target.serial;
    const members = await this.#members(credentials, signal);
    if (members.length === 0) {
      throw new RedfishError("no_system", `GET ${url}: the BMC lists no systems`);
    }
    const judged: (ReadSystem & { verdict: ReturnType<typeof judgeIdentity> })[] = [];
    for (const path of members) {
      const read = await this.#read(path, credentials, signal);
      judged.push({ ...read, verdict: judgeIdentity(read.system, id) });
    }
    const confirmed = judged.filter((j) => j.verdict.kind === "confirmed");
    if (confirmed.length === 1) {
      const [chosen] = confirmed;
      this.#discovered = { path: chosen!.path, byIdentity: true };
      return { path: chosen!.path, system: chosen!.system };
    }
    if (confirmed.length > 1) {
      throw new RedfishError(
        "no_system",
        `GET ${url}: ${confirmed.length} systems report the machine's id ${quote(id)} (${
          confirmed.slice(0, 4).map((c) => c.path).join(", ")
        }); set system in [machines.bmc]`,
      );
    }
    if (judged.length === 1) {
      const [only] = judged;
      this.#requireIdentity(only!, false);
      this.#discovered = { path: only!.path, byIdentity: false };
      return { path: only!.path, system: only!.system };
    }
    throw new RedfishError(
      "no_system",
      `GET ${url}: ${judged.length} systems, none reporting the machine's id ${quote(id)} as ` +
        "SerialNumber, AssetTag or UUID; set system in [machines.bmc]",
    );
  }

  /**
   * Every member of the Systems collection, its pages followed.
   * @throws {RedfishError} when a member or a next page is not a path Keelson may request, the
   *   collection is larger than Keelson reads, or it lists fewer members than it counts
   */
  async #members(credentials: BmcCredentials, signal: AbortSignal): Promise<string[]> {
    const endpoint = this.#target.endpoint;
    const members = new Set<string>();
    const pages = new Set<string>();
    let listed = 0;
    let counted: number | undefined;
    let next: string | undefined = SYSTEMS_COLLECTION_PATH;
    while (next !== undefined) {
      if (pages.size >= MAX_COLLECTION_PAGES) {
        throw new RedfishError(
          "no_system",
          `GET ${endpoint}${SYSTEMS_COLLECTION_PATH}: more than ${MAX_COLLECTION_PAGES} pages of ` +
            "systems; set system in [machines.bmc]",
        );
      }
      pages.add(next);
      const url = `${endpoint}${next}`;
      const page = CollectionSchema.safeParse(
        await request(this.#target, credentials, "GET", next, signal),
      );
      if (!page.success) {
        throw new RedfishError("not_redfish", `GET ${url}: not a Redfish collection`);
      }
      counted ??= page.data["Members@odata.count"];
      for (const member of page.data.Members) {
        const odataId = member["@odata.id"];
        const parsed = memberPath(odataId);
        if ("problem" in parsed) {
          throw new RedfishError(
            "unsafe_path",
            `GET ${url}: member ${quote(odataId)} ${parsed.problem}; set system in [machines.bmc]`,
          );
        }
        listed++;
        members.add(parsed.path);
        if (members.size > MAX_DISCOVERED_SYSTEMS) {
          throw new RedfishError(
            "no_system",
            `GET ${url}: more than ${MAX_DISCOVERED_SYSTEMS} systems; set system in [machines.bmc]`,
          );
        }
      }
      const link = page.data["Members@odata.nextLink"];
      if (link === undefined || link === null) {
        next = undefined;
        continue;
      }
      const parsed = pagePath(link);
      if ("problem" in parsed) {
        throw new RedfishError(
          "unsafe_path",
          `GET ${url}: Members@odata.nextLink ${quote(link)} ${parsed.problem}`,
        );
      }
      if (pages.has(parsed.path)) {
        throw new RedfishError(
          "not_redfish",
          `GET ${url}: Members@odata.nextLink ${quote(link)} names a page already read`,
        );
      }
      next = parsed.path;
    }
    if (counted !== undefined && counted !== listed) {
      throw new RedfishError(
        "no_system",
        `GET ${endpoint}${SYSTEMS_COLLECTION_PATH}: counts ${counted} systems ` +
          `(Members@odata.count) but lists ${listed}; set system in [machines.bmc]`,
      );
    }
    return [...members];
  }
}
