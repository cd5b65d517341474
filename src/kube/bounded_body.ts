/**
 * The one reader of API response bodies: chunk by chunk, never more than a cap. A body that
 * grows past its cap is cancelled at once (the connection stops sending it) and nothing past the
 * cap is kept, so a server answering a gigabyte costs this process at most the cap. A body's
 * `Content-Length` above the cap is refused before the first byte is read.
 *
 * The caps (`BODY_LIMITS`) are sized for real clusters, with room:
 * - one object: etcd refuses a value above 1.5 MiB and the API server a request above 3 MiB;
 *   its JSON is at most a few times its stored size. 16 MiB.
 * - one list page: the pager asks for 500 items (`LIST_PAGE_SIZE`, client-go's reflector page).
 *   A Node with its 50 images, conditions and managedFields is 10–30 KiB of JSON, a Service or an
 *   EndpointSlice 2–20 KiB, a Pod 5–20 KiB, so a page of 500 is 1–15 MB. 16 MiB, and a page past
 *   it is asked for again with a quarter of the items (`list_pages.ts`), so a cluster of larger
 *   objects is still read, page by smaller page. A bound this size also keeps what a page costs
 *   once parsed (its text and objects, several times its bytes) small, and `run`'s informers
 *   list four collections at once: four pages in flight stay within 64 MiB.
 * - one watch event (one line): one object, 16 MiB.
 * - the text of an error answer (non-2xx): 64 KiB is read and the rest dropped; a `Status` is
 *   a few hundred bytes and only its first line is ever shown (`api_error.ts`).
 *
 * @module
 */

/** The caps of the bodies Keelson reads, in bytes (see the module's text for why). */
export const BODY_LIMITS = {
  /** The answer to a GET, POST, PUT, PATCH or DELETE of one object. */
  object: 16 * 1024 * 1024,
  /** One page of a list (`LIST_PAGE_SIZE` items, fewer when a page is too large). */
  listPage: 16 * 1024 * 1024,
  /** One line of a watch stream: one event. */
  watchEvent: 16 * 1024 * 1024,
  /** What is kept of an error answer's body (the rest is dropped, not refused). */
  errorText: 64 * 1024,
} as const;

/** The page size every list asks for (`limit`), as client-go's reflector. */
export const LIST_PAGE_SIZE = 500;

/** The `KubeApiError` reason of a request whose answer was larger than its cap. */
export const RESPONSE_TOO_LARGE = "ResponseTooLarge";

/** A body (or one watch event) larger than its cap; nothing past the cap was kept. */
export class ResponseTooLargeError extends Error {
  /** The cap, in bytes. */
  readonly maxBytes: number;
  /**
   * @param what what the body is, e.g. `one list page`
   * @param maxBytes the cap
   */
  constructor(what: string, maxBytes: number) {
    super(
      `the API server's answer is larger than ${formatBytes(maxBytes)}, the most Keelson reads ` +
        `of ${what}; it stopped reading`,
    );
    this.name = "ResponseTooLargeError";
    this.maxBytes = maxBytes;
  }
}

/** Options of `readBoundedBody`. */
export interface BoundedReadOptions {
  /** The cap, in bytes. */
  maxBytes: number;
  /** What the body is, for the error (e.g. `one list page`). */
  what: string;
  /** Past the cap, keep the first `maxBytes` and drop the rest instead of failing. */
  truncate?: boolean;
  /** Every read ends with the signal's reason when it aborts (the body is cancelled then). */
  signal?: AbortSignal;
  /** The declared `Content-Length`, if any: above the cap, nothing is read. */
  declaredLength?: string | null;
}

/**
 * Reads a body up to a cap.
 * @param body the body (null: empty)
 * @param options cap, name, truncation, signal
 * @returns the bytes (at most `maxBytes`), and whether some were dropped (`truncate` only)
 * @throws {ResponseTooLargeError} past the cap (without `truncate`); the signal's reason on abort;
 *   the stream's error
 */
export async function readBoundedBody(
  body: ReadableStream<Uint8Array> | null,
  options: BoundedReadOptions,
): Promise<{ bytes: Uint8Array<ArrayBuffer>; truncated: boolean }> {
  if (!body) return { bytes: new Uint8Array(0), truncated: false };
  const { maxBytes, signal } = options;
  const declared = options.declaredLength ? Number(options.declaredLength) : NaN;
  if (!options.truncate && Number.isSafeInteger(declared) && declared > maxBytes) {
    await body.cancel().catch(() => {});
    throw new ResponseTooLargeError(options.what, maxBytes);
  }
  const reader = body.getReader();
  // one listener for the whole read, strongly held (abortable_body.ts says why fetch's is not
  // enough); every read races it
  let onAbort = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal?.reason);
  });
  aborted.catch(() => {});
  if (signal?.aborted) onAbort();
  else signal?.addEventListener("abort", onAbort, { once: true });
  const chunks: Uint8Array[] = [];
  let size = 0;
  let truncated = false;
  try {
    while (true) {
      const { done, value } = await Promise.race([reader.read(), aborted]);
      if (done) break;
      if (size + value.byteLength > maxBytes) {
        if (!options.truncate) throw new ResponseTooLargeError(options.what, maxBytes);
        // a copy: a view would keep the whole chunk's buffer alive
        chunks.push(value.slice(0, maxBytes - size));
        size = maxBytes;
        truncated = true;
        break;
      }
      chunks.push(value);
      size += value.byteLength;
    }
  } catch (error) {
    reader.cancel(error).catch(() => {});
    throw signal?.aborted ? signal.reason : error;
  } finally {
    signal?.removeEventListener("abort", onAbort);
  }
  if (truncated) reader.cancel().catch(() => {});
  return { bytes: concat(chunks, size), truncated };
}

/**
 * Reads a response's body up to a cap. A body that declares its length within the cap and is not
 * compressed is read by the runtime in one go (the HTTP/1.1 and HTTP/2 layers never deliver more
 * than a declared length, and a stream step per chunk costs CPU and memory in a burst of small
 * answers); any other body goes through `readBoundedBody` chunk by chunk. A compressed body's
 * declared length is the compressed one, and fetch inflates it: only its inflated bytes count.
 * @param response the response
 * @param options cap, name, truncation, signal (the declared length is the response's own)
 * @returns the bytes (at most `maxBytes`), and whether some were dropped (`truncate` only)
 * @throws as `readBoundedBody`
 */
export async function readBoundedResponse(
  response: Response,
  options: Omit<BoundedReadOptions, "declaredLength">,
): Promise<{ bytes: Uint8Array<ArrayBuffer>; truncated: boolean }> {
  const declaredLength = response.headers.get("content-length");
  const declared = declaredLength ? Number(declaredLength) : NaN;
  const encoding = response.headers.get("content-encoding");
  if (
    response.body && Number.isSafeInteger(declared) && declared <= options.maxBytes &&
    (encoding === null || encoding.trim().toLowerCase() === "identity")
  ) {
    return { bytes: await wholeBody(response, options.signal), truncated: false };
  }
  return await readBoundedBody(response.body, { ...options, declaredLength });
}

/** The whole body read by the runtime, or the signal's reason as soon as it aborts. */
function wholeBody(
  response: Response,
  signal: AbortSignal | undefined,
): Promise<Uint8Array<ArrayBuffer>> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      response.body?.cancel(signal?.reason).catch(() => {});
      reject(signal?.reason);
    };
    if (signal?.aborted) return onAbort();
    signal?.addEventListener("abort", onAbort, { once: true });
    response.arrayBuffer().then(
      (buffer) => resolve(new Uint8Array(buffer)),
      (error) => reject(signal?.aborted ? signal.reason : error),
    ).finally(() => signal?.removeEventListener("abort", onAbort));
  });
}

/** One buffer of the chunks; a single chunk that owns its buffer is returned as it is. */
function concat(chunks: Uint8Array[], size: number): Uint8Array<ArrayBuffer> {
  const only = chunks[0];
  if (
    chunks.length === 1 && only && only.buffer instanceof ArrayBuffer && only.byteOffset === 0 &&
    only.byteLength === only.buffer.byteLength
  ) {
    return only as Uint8Array<ArrayBuffer>;
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

/**
 * A byte count as people read it.
 * @param bytes the count
 * @returns e.g. `64 MiB`, `16 KiB`, `100 bytes`
 */
export function formatBytes(bytes: number): string {
  const mib = 1024 * 1024;
  if (bytes >= mib && bytes % mib === 0) return `${bytes / mib} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}
