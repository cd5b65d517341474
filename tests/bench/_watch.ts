/**
 * A plain `?watch=1` stream read by the benchmark itself, so that it sees every change the moment
 * the apiserver sends it, at the cost of one connection (polling a list of 1000 objects would
 * load the apiserver the agent is being measured against).
 *
 * @module
 */
import type { ControlPlane } from "../integration/_harness/control_plane.ts";

/** One watch event with the moment (performance.now()) the benchmark read it. */
export interface SeenEvent<T> {
  type: "ADDED" | "MODIFIED" | "DELETED";
  object: T;
  atMs: number;
}

/** A running watch. */
export interface BenchWatch extends AsyncDisposable {
  /** Ends the stream. */
  stop(): Promise<void>;
  /** Rejects when the stream fails for good before `stop()` (never resolves). */
  ended: Promise<never>;
}

/**
 * Lists `path` once for its resourceVersion, then watches from there and calls `onEvent` for each
 * ADDED/MODIFIED/DELETED event. The watch is open when the returned promise resolves, so nothing
 * created afterwards is missed; a watch the apiserver ends early is resumed from the last version
 * seen (or from a fresh list, its objects passed on as MODIFIED, when that version expired).
 * @param cp the control plane (admin token, CA)
 * @param path a collection path, e.g. `/api/v1/nodes`
 * @param onEvent called synchronously per event
 * @returns a handle that ends the stream
 * @throws {Error} when the list or the watch request fails
 */
export async function startWatch<T>(
  cp: ControlPlane,
  path: string,
  onEvent: (event: SeenEvent<T>) => void,
): Promise<BenchWatch> {
  const list = await cp.requestOk<{ metadata: { resourceVersion: string } }>(
    "GET",
    `${path}?limit=1`,
  );
  let resourceVersion = list.metadata.resourceVersion;
  const client = Deno.createHttpClient({ caCerts: [cp.caPem] });
  const abort = new AbortController();
  const open = async (): Promise<Response> => {
    const url = new URL(path, cp.server);
    url.searchParams.set("watch", "1");
    url.searchParams.set("resourceVersion", resourceVersion);
    url.searchParams.set("timeoutSeconds", "3600");
    url.searchParams.set("allowWatchBookmarks", "true");
    const response = await fetch(url, {
      headers: { authorization: `Bearer ${cp.adminToken}`, accept: "application/json" },
      client,
      signal: abort.signal,
    });
    if (!response.ok || !response.body) {
      throw new Error(`Cannot watch ${path}: the apiserver answered ${response.status}`);
    }
    return response;
  };
  // A list seen as events (after the watch fell too far behind: 410 Gone).
  const relist = async (): Promise<void> => {
    const all = await cp.requestOk<{ metadata: { resourceVersion: string }; items: T[] }>(
      "GET",
      path,
    );
    const atMs = performance.now();
    for (const object of all.items) onEvent({ type: "MODIFIED", object, atMs });
    resourceVersion = all.metadata.resourceVersion;
  };
  let response: Response;
  try {
    response = await open();
  } catch (error) {
    client.close();
    throw error;
  }
  // The apiserver may end a watch whose reader falls behind (a burst of thousands of objects on a
  // busy machine): go on from the last version seen, or from a fresh list when that is too old.
  const reading = (async () => {
    let resumes = 0;
    while (!abort.signal.aborted) {
      const decoder = new TextDecoder();
      let buffer = "";
      let expired = false;
      try {
        for await (const chunk of response.body!) {
          const atMs = performance.now();
          buffer += decoder.decode(chunk, { stream: true });
          let newline: number;
          while ((newline = buffer.indexOf("\n")) >= 0) {
            const line = buffer.slice(0, newline).trim();
            buffer = buffer.slice(newline + 1);
            if (line === "") continue;
            const event = JSON.parse(line) as {
              type: string;
              object: T & { metadata?: { resourceVersion?: string }; code?: number };
            };
            if (event.type === "ERROR") {
              if (event.object.code === 410) {
                expired = true;
                break;
              }
              throw new Error(`Watch of ${path} failed: ${JSON.stringify(event.object)}`);
            }
            resourceVersion = event.object.metadata?.resourceVersion ?? resourceVersion;
            if (event.type === "ADDED" || event.type === "MODIFIED" || event.type === "DELETED") {
              onEvent({ type: event.type, object: event.object, atMs });
            }
          }
          if (expired) break;
        }
      } catch (error) {
        if (abort.signal.aborted) return;
        if (++resumes > 20) throw error;
      }
      if (abort.signal.aborted) return;
      if (++resumes > 20) throw new Error(`The watch of ${path} ended early 20 times`);
      if (expired) await relist();
      response = await open();
    }
  })();
  const ended = reading.then(() => new Promise<never>(() => {}));
  ended.catch(() => {}); // observed by callers that race it; never an unhandled rejection
  const stop = async (): Promise<void> => {
    abort.abort();
    await reading.catch(() => {});
    client.close();
  };
  return { stop, ended, [Symbol.asyncDispose]: stop };
}
