/**
 * "Nothing else happens" for a stated window, watched rather than slept: the apiserver's watch
 * streams every write to the collections named, from the resourceVersion current when the window
 * opens, and the check fails at the first write it does not allow. A sleep followed by one look
 * passes when the unwanted write merely comes after the look.
 *
 * @module
 */
import type { ControlPlane } from "./control_plane.ts";

/** One write seen on a watch. */
export interface WatchedWrite {
  /** The collection watched, as given. */
  path: string;
  type: "ADDED" | "MODIFIED" | "DELETED";
  /** `namespace/name`, or the name of a cluster-scoped object. */
  key: string;
  /** The object after the write (before it, for DELETED), as the apiserver sent it. */
  object: { metadata?: { name?: string; namespace?: string }; [field: string]: unknown };
}

/** Options of `quietFor`. */
export interface QuietOptions {
  /** What must stay quiet, for the failure message (`Services after the takeover`). */
  what: string;
  /** Collections to watch, e.g. `/api/v1/services` or `/api/v1/namespaces/x/events`. */
  paths: string[];
  /** How long to watch. */
  forMs: number;
  /** Which writes count against the window. @default every write */
  unwanted?: (write: WatchedWrite) => boolean;
  /** How many unwanted writes the window tolerates (a budget). @default 0 */
  allowed?: number;
}

/** A watch line longer than this is refused rather than buffered. */
const MAX_LINE = 4 * 1024 * 1024;

/**
 * Watches the collections for `forMs` and fails on the first unwanted write past the allowance.
 * @param cp the control plane (admin identity)
 * @param options collections, window, what is unwanted and how many are allowed
 * @returns every write seen in the window (wanted or not), for a figure
 * @throws {Error} `<what>: unwanted write N …` naming the write, at the moment it is seen
 */
export async function quietFor(cp: ControlPlane, options: QuietOptions): Promise<WatchedWrite[]> {
  const unwanted = options.unwanted ?? (() => true);
  const allowed = options.allowed ?? 0;
  const client = Deno.createHttpClient({ caCerts: [cp.caPem], http2: false });
  const stop = new AbortController();
  const seen: WatchedWrite[] = [];
  let counted = 0;
  let failure: Error | undefined;
  try {
    // each collection's resourceVersion first, so no write between the list and the watch is lost
    const starts = await Promise.all(options.paths.map(async (path) => {
      const list = await cp.requestOk<{ metadata?: { resourceVersion?: string } }>(
        "GET",
        `${path}${path.includes("?") ? "&" : "?"}limit=1`,
      );
      const version = list.metadata?.resourceVersion;
      if (!version) throw new Error(`${path}: the list carries no resourceVersion`);
      return { path, version };
    }));
    const watches = starts.map(({ path, version }) =>
      watchLines(cp, client, path, version, stop.signal, (line) => {
        const event = JSON.parse(line) as { type: string; object: WatchedWrite["object"] };
        if (event.type === "BOOKMARK") return;
        if (event.type === "ERROR") {
          throw new Error(`${options.what}: the watch of ${path} failed: ${line.slice(0, 500)}`);
        }
        const meta = event.object.metadata ?? {};
        const write: WatchedWrite = {
          path,
          type: event.type as WatchedWrite["type"],
          key: meta.namespace ? `${meta.namespace}/${meta.name}` : String(meta.name),
          object: event.object,
        };
        seen.push(write);
        if (unwanted(write) && ++counted > allowed) {
          throw new Error(
            `${options.what}: unwanted write ${counted} (${allowed} allowed) in the ` +
              `${options.forMs} ms window: ${write.type} ${write.key} on ${path}`,
          );
        }
      }).catch((error) => {
        failure ??= error;
        stop.abort();
      })
    );
    const window = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, options.forMs);
      stop.signal.addEventListener("abort", () => {
        clearTimeout(timer);
        resolve();
      });
    });
    await window;
    stop.abort();
    await Promise.all(watches);
    if (failure) throw failure;
    return seen;
  } finally {
    stop.abort();
    client.close();
  }
}

/** Streams a watch's lines to `onLine` until `signal` aborts; an abort ends it quietly. */
async function watchLines(
  cp: ControlPlane,
  client: Deno.HttpClient,
  path: string,
  resourceVersion: string,
  signal: AbortSignal,
  onLine: (line: string) => void,
): Promise<void> {
  const url = new URL(path, cp.server);
  url.searchParams.set("watch", "1");
  url.searchParams.set("resourceVersion", resourceVersion);
  url.searchParams.set("allowWatchBookmarks", "false");
  let response: Response;
  try {
    response = await fetch(url, {
      headers: { authorization: `Bearer ${cp.adminToken}`, accept: "application/json" },
      client,
      signal,
    });
  } catch (error) {
    if (signal.aborted) return;
    throw error;
  }
  if (!response.ok || !response.body) {
    throw new Error(`watch ${path} answered ${response.status}: ${await response.text()}`);
  }
  let buffer = "";
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += value;
      let newline;
      while ((newline = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, newline).trim();
        buffer = buffer.slice(newline + 1);
        if (line !== "") onLine(line);
      }
      if (buffer.length > MAX_LINE) throw new Error(`watch ${path}: a line over ${MAX_LINE} bytes`);
    }
  } catch (error) {
    // the window's end (or another watch's failure) aborts the read; a line's failure comes first
    if (signal.aborted) return;
    throw error;
  }
}
