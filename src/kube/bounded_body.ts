/**
 * The one reader of API response bodies: chunk by chunk, never more than a cap. A body that
 * grows past its cap is cancelled at once (the connection stops sending it) and nothing past the
 * cap is kept, so a server answering a gigabyte costs this process at most the cap. A body's
 * `Content-Length` above the cap is refused before the first byte is read.
 *
 * The caps (`BODY_LIMITS`) are sized for real clusters, with room, and for what a refused answer
 * may cost:
 * - one object: etcd refuses a value above 1.5 MiB (`--max-request-bytes`) and the API server a
 *   request above 3 MiB; its JSON is at most about twice its stored size. 8 MiB.
 * - one list page: the pager asks for 500 items (`LIST_PAGE_SIZE`, client-go's reflector page).
 *   A Service, an EndpointSlice or a Lease is 1–10 KiB of JSON, a Node with its images,
 *   conditions and managedFields 10–30 KiB, so a page is 1–8 MB, Nodes of large clusters up to
 *   15 MB. 8 MiB (16 KiB an item on average), and a page past it is asked for again with a tenth
 *   of the items (`list_pages.ts`), so larger objects are still read, in smaller pages. The bound
 *   is what a hostile or broken server can make Keelson hold: `run` lists five collections at
 *   once, and a refused page is read four times (500, 50, 5, 1 items) before the list fails.
 *   With 8 MiB, `plan`, `status` and `import` answered a 1 GiB page peak at 87–136 MB and `run`
 *   at 163 MB (tests/integration/huge_answers_test.ts; a 16 MiB bound cost 30–70 MB more), and
 *   what a page costs once parsed (text and objects, several times its bytes) stays small too.
 * - one watch event (one line): one object, 8 MiB.
 * - the text of an error answer (non-2xx): 64 KiB is read and the rest dropped; a `Status` is
 *   a few hundred bytes and only its first line is ever shown (`api_error.ts`).
 *
 * @module
 */

/** The caps of the bodies Keelson reads, in bytes (see the module's text for why). */
export const BODY_LIMITS = {
  /** The answer to a GET, POST, PUT, PATCH or DELETE of one object. */
  object: 8 * 1024 * 1024,
  /** One page of a list (`LIST_PAGE_SIZE` items, fewer when a page is too large). */
  listPage: 8 * 1024 * 1024,
  /** One line of a watch stream: one event. */
  watchEvent: 8 * 1024 * 1024,
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
  // a byte stream (every fetch body) is read into one buffer of ours (BYOB): the runtime then
  // allocates nothing per chunk (its chunks are 64 KiB buffers, often holding one 16 KiB HTTP/2
  // frame, that a burst leaves behind faster than they are collected)
  let byob: ReadableStreamBYOBReader | undefined;
  try {
    byob = body.getReader({ mode: "byob" });
  } catch {
    // a stream made in JS without `type: "bytes"`: chunk by chunk
  }
  const reader = byob ?? body.getReader();
  // one listener for the whole read, strongly held (abortable_body.ts says why fetch's is not
  // enough); it rejects the read in flight. Not a race against one long-lived promise: every
  // race would add a reaction to it that holds the chunk it settled with, until the body ends.
  let rejectPending: ((reason: unknown) => void) | undefined;
  const onAbort = () => rejectPending?.(signal?.reason);
  signal?.addEventListener("abort", onAbort, { once: true });
  function pending<T>(read: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      rejectPending = reject;
      read().then(resolve, reject);
    });
  }
  try {
    return byob
      ? await readInto(byob, options, pending)
      : await readChunks(reader as ReadableStreamDefaultReader<Uint8Array>, options, pending);
  } catch (error) {
    reader.cancel(error).catch(() => {});
    throw signal?.aborted ? signal.reason : error;
  } finally {
    rejectPending = undefined;
    signal?.removeEventListener("abort", onAbort);
  }
}

type Pending = <T>(read: () => Promise<T>) => Promise<T>;

/**
 * Reads into blocks of ours (64 KiB, then 1 MiB each), filled in turn: no block is copied while
 * reading, so a refused body leaves behind the bytes it read and no more. One byte past the cap
 * is read to see a body go past it.
 */
async function readInto(
  reader: ReadableStreamBYOBReader,
  options: BoundedReadOptions,
  pending: Pending,
): Promise<{ bytes: Uint8Array<ArrayBuffer>; truncated: boolean }> {
  const { maxBytes } = options;
  const limit = maxBytes + 1;
  const blocks: Uint8Array<ArrayBuffer>[] = [];
  let block = new ArrayBuffer(Math.min(limit, 64 * 1024));
  let filled = 0;
  let size = 0;
  while (size < limit) {
    if (filled === block.byteLength) {
      blocks.push(new Uint8Array(block));
      block = new ArrayBuffer(Math.min(limit - size, 1024 * 1024));
      filled = 0;
    }
    const view = new Uint8Array(block, filled, block.byteLength - filled);
    const { done, value } = await pending(() => reader.read(view));
    if (value) block = value.buffer as ArrayBuffer;
    if (done) break;
    filled += value?.byteLength ?? 0;
    size += value?.byteLength ?? 0;
  }
  blocks.push(new Uint8Array(block, 0, filled));
  if (size > maxBytes) {
    if (!options.truncate) throw new ResponseTooLargeError(options.what, maxBytes);
    reader.cancel().catch(() => {});
  }
  const kept = Math.min(size, maxBytes);
  return { bytes: concat(blocks, kept), truncated: size > maxBytes };
}

/** Reads chunk by chunk, keeping no more than the bytes read. */
async function readChunks(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  options: BoundedReadOptions,
  pending: Pending,
): Promise<{ bytes: Uint8Array<ArrayBuffer>; truncated: boolean }> {
  const { maxBytes } = options;
  const chunks: Uint8Array[] = [];
  let size = 0;
  let truncated = false;
  while (true) {
    const { done, value } = await pending(() => reader.read());
    if (done) break;
    let chunk = value;
    if (size + chunk.byteLength > maxBytes) {
      if (!options.truncate) throw new ResponseTooLargeError(options.what, maxBytes);
      chunk = chunk.subarray(0, maxBytes - size);
      truncated = true;
    }
    // a view that wastes most of its buffer is copied, so what is kept is the bytes read
    chunks.push(chunk.byteLength * 2 < chunk.buffer.byteLength ? chunk.slice() : chunk);
    size += chunk.byteLength;
    if (truncated) break;
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

/** One buffer of the chunks' first `size` bytes; a single chunk that owns its buffer and holds
 * exactly them is returned as it is. */
function concat(chunks: Uint8Array[], size: number): Uint8Array<ArrayBuffer> {
  const only = chunks[0];
  if (
    chunks.length === 1 && only && only.buffer instanceof ArrayBuffer && only.byteOffset === 0 &&
    only.byteLength === only.buffer.byteLength && only.byteLength === size
  ) {
    return only as Uint8Array<ArrayBuffer>;
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    if (offset >= size) break;
    const part = chunk.subarray(0, size - offset);
    bytes.set(part, offset);
    offset += part.byteLength;
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
