/**
 * Liveness of the connection to the API server: a cheap request (`GET /version`) over the same
 * connection every few seconds; no answer within the timeout means the connection is dead and it
 * is replaced (`ApiConnection.replace`), which fails every watch and request on it so they are
 * retried over a new one. client-go does the same with HTTP/2 PING frames after 30 s of read
 * idleness plus a 15 s timeout (43–45 s to notice); here a dead path is noticed within
 * `intervalMs + timeoutMs` (9 s by default) and every watch is re-established right after.
 *
 * @module
 */
import { Histogram, type Registry } from "prom-client";
import { declareOnce } from "../metrics/registry.ts";
import type { ApiConnection, ConnectionGeneration } from "./connection.ts";

/** Time between two pings. */
export const PING_INTERVAL_MS = 5_000;
/** A ping without an answer this long means the connection is dead. */
export const PING_TIMEOUT_MS = 4_000;

/** What one ping found. */
export type PingOutcome = "answered" | "timeout" | "failed";

/** Sends one ping on a generation; resolves (never rejects) with what happened. */
export type Ping = (
  generation: ConnectionGeneration,
  timeoutMs: number,
  stop: AbortSignal,
) => Promise<PingOutcome>;

/** Options of `startLiveness`. */
export interface LivenessOptions {
  /** @default PING_INTERVAL_MS */
  intervalMs?: number;
  /** @default PING_TIMEOUT_MS */
  timeoutMs?: number;
  /** Where `keelson_kube_connection_ping_duration_seconds` goes. */
  registry: Registry;
}

/**
 * Pings the connection until stopped. Its timer does not keep the process alive.
 * @param connection the connection to check and replace
 * @param ping sends one ping
 * @param options interval, timeout, registry
 * @returns `stop()`
 */
export function startLiveness(
  connection: ApiConnection,
  ping: Ping,
  options: LivenessOptions,
): { stop(): void } {
  const intervalMs = options.intervalMs ?? PING_INTERVAL_MS;
  const timeoutMs = options.timeoutMs ?? PING_TIMEOUT_MS;
  const duration = pingHistogram(options.registry);
  const stop = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const tick = async () => {
    if (stop.signal.aborted) return;
    const generation = connection.current;
    const started = performance.now();
    const outcome = await ping(generation, timeoutMs, stop.signal);
    duration.observe({ outcome }, (performance.now() - started) / 1000);
    if (outcome === "timeout" && !stop.signal.aborted) {
      connection.replace(
        generation.id,
        "ping-timeout",
        `no answer to GET /version within ${timeoutMs} ms`,
      );
    }
    schedule();
  };
  const schedule = () => {
    if (stop.signal.aborted) return;
    const id = setTimeout(tick, intervalMs);
    Deno.unrefTimer(id);
    timer = id;
  };
  schedule();
  return {
    stop() {
      stop.abort();
      clearTimeout(timer);
    },
  };
}

function pingHistogram(registry: Registry): Histogram<"outcome"> {
  const name = "keelson_kube_connection_ping_duration_seconds";
  return declareOnce(registry, name, () =>
    new Histogram({
      name,
      help: "Liveness pings (GET /version) on the connection to the API server, by outcome " +
        "(answered, timeout, failed).",
      labelNames: ["outcome"],
      buckets: [0.005, 0.025, 0.1, 0.5, 1, 2, 4, 8],
      registers: [registry],
    }));
}
