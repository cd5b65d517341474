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
  /** Rejects when the stream ends or fails before `stop()` (never resolves). */
  ended: Promise<never>;
}

/**
 * Lists `path` once for its resourceVersion, then watches from there and calls `onEvent` for each
 * ADDED/MODIFIED/DELETED event. The watch is open when the returned promise resolves, so nothing
 * created afterwards is missed.
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
  const client = Deno.createHttpClient({ caCerts: [cp.caPem] });
  const abort = new AbortController();
  const url = new URL(path, cp.server);
  url.searchParams.set("watch", "1");
  url.searchParams.set("resourceVersion", list.metadata.resourceVersion);
  url.searchParams.set("timeoutSeconds", "3600");
  const response = await fetch(url, {
    headers: { authorization: `Bearer ${cp.adminToken}`, accept: "application/json" },
    client,
    signal: abort.signal,
  });
  if (!response.ok || !response.body) {
    client.close();
    throw new Error(`Cannot watch ${path}: the apiserver answered ${response.status}`);
  }
  const reading = (async () => {
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for await (const chunk of response.body!) {
        const atMs = performance.now();
        buffer += decoder.decode(chunk, { stream: true });
        let newline: number;
        while ((newline = buffer.indexOf("\n")) >= 0) {
          const line = buffer.slice(0, newline).trim();
          buffer = buffer.slice(newline + 1);
          if (line === "") continue;
          const event = JSON.parse(line) as { type: string; object: T };
          if (event.type === "ERROR") {
            throw new Error(`Watch of ${path} failed: ${JSON.stringify(event.object)}`);
          }
          if (event.type === "ADDED" || event.type === "MODIFIED" || event.type === "DELETED") {
            onEvent({ type: event.type, object: event.object, atMs });
          }
        }
      }
    } catch (error) {
      if (!abort.signal.aborted) throw error;
    }
    if (!abort.signal.aborted) throw new Error(`The watch of ${path} ended early`);
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
