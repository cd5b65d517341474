/**
 * Kubernetes Events (core/v1) with client-go's naming and repeat aggregation, written in the
 * background so a controller never waits on, or fails because of, an event.
 *
 * Simplified from client-go's EventCorrelator: only exact repeats are aggregated (same involved
 * object, type, reason and message, seen again within 10 minutes, patched as `count` +
 * `lastTimestamp`), and client-go's per-object spam filter holds (`event_spam_filter.ts`: 25
 * Events per component and object, one more every 5 minutes; a skipped repeat still counts).
 * Not ported: the "similar events" aggregator (10 events differing only in message folded into
 * one "(combined from similar events)" event). Writes are ordered and go one at a time.
 *
 * @module
 */
import type { CoreV1Event, V1ObjectReference } from "@kubernetes/client-node";
import { logger } from "../log/logging.ts";
import { type Clock, systemClock } from "./clock.ts";
import { EventSpamFilter } from "./event_spam_filter.ts";
import { type EventRecorder, type EventTarget, isNotFound } from "./ports.ts";

/** Where events are written: the events API of core/v1. */
export interface EventSink {
  /**
   * Creates an Event.
   * @param namespace the Event's namespace
   * @param event the Event, with `metadata.name` set
   * @returns the stored Event
   */
  create(namespace: string, event: CoreV1Event): Promise<CoreV1Event>;
  /**
   * Patches an existing Event (a strategic-merge or merge patch of `count` and `lastTimestamp`).
   * @param namespace the Event's namespace
   * @param name the Event's name
   * @param patch the patch body
   * @returns the stored Event
   */
  patch(namespace: string, name: string, patch: unknown): Promise<CoreV1Event>;
}

/** Options of `AggregatingEventRecorder`. */
export interface AggregatingEventRecorderOptions {
  /** `source.component` and `reportingComponent`, e.g. `cloud-node-controller`. */
  component: string;
  /** `source.host` and `reportingInstance`. @default "" */
  host?: string;
  /** Time source. @default systemClock() */
  clock?: Clock;
  /** Writes waiting at most; further events are dropped with a log line. @default 1000 */
  maxPending?: number;
}

/** How long a repeat is folded into the earlier Event (client-go: 10 minutes). */
const AGGREGATION_WINDOW_MS = 10 * 60 * 1000;
/** At most one log line per this long about dropped events. */
const DROP_LOG_INTERVAL_MS = 10_000;
/** Repeats remembered at most (client-go's LRU size). */
const MAX_CACHE_ENTRIES = 4096;

interface Seen {
  namespace: string;
  name: string;
  count: number;
  lastSeen: number;
  event: CoreV1Event;
  /** False while the spam filter has skipped every occurrence: the next one creates it. */
  written: boolean;
}

/** How long pending Event writes may take when the agent stops. */
export const EVENT_GRACE_MS = 2_000;

/** An EventRecorder that writes to an EventSink, folding repeats into one Event. */
export class AggregatingEventRecorder implements EventRecorder {
  #sink: EventSink;
  #component: string;
  #host: string;
  #clock: Clock;
  #maxPending: number;
  #seen = new Map<string, Seen>();
  #spam = new EventSpamFilter();
  #pending: (() => Promise<void>)[] = [];
  #draining: Promise<void> | undefined;
  // a random start: recorders in several processes (every host records) writing in the same
  // millisecond must not produce the same name (409 AlreadyExists drops the event)
  #seq = crypto.getRandomValues(new Uint32Array(1))[0]! % 1_000_000;
  #closed = false;
  #log = logger("kube", "events");
  /** Events dropped since the last log line about it (one line per 10 s, not one per event). */
  #dropped = 0;
  #droppedLoggedAt = -Infinity;

  /**
   * @param sink where Events are written
   * @param options component, host, clock, queue bound
   */
  constructor(sink: EventSink, options: AggregatingEventRecorderOptions) {
    this.#sink = sink;
    this.#component = options.component;
    this.#host = options.host ?? "";
    this.#clock = options.clock ?? systemClock();
    this.#maxPending = options.maxPending ?? 1000;
  }

  /**
   * Records one event; returns at once and never throws (failures are logged).
   * @param object the involved object
   * @param type `Normal` or `Warning`
   * @param reason CamelCase reason
   * @param message what happened
   */
  event(object: EventTarget, type: "Normal" | "Warning", reason: string, message: string): void {
    if (this.#closed) return;
    try {
      this.#record(objectReference(object), type, reason, message);
    } catch (error) {
      this.#log.error("Cannot record event {reason}: {error}", { reason, error });
    }
  }

  /**
   * Waits until every event recorded so far has been written (or failed).
   * @returns resolves when the write queue is empty
   */
  async flush(): Promise<void> {
    while (this.#draining) await this.#draining;
  }

  /**
   * Stops recording (later events are ignored) and gives the queued writes `graceMs` to finish;
   * what is still queued then is dropped, with one log line saying how many.
   * @param graceMs how long pending writes may take
   * @returns how many writes were dropped
   */
  async close(graceMs: number = EVENT_GRACE_MS): Promise<number> {
    this.#closed = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const flushed = await Promise.race([
      this.flush().then(() => true),
      new Promise<false>((resolve) => timer = setTimeout(() => resolve(false), graceMs)),
    ]);
    clearTimeout(timer);
    if (flushed) return 0;
    // the write in progress (bounded by the request deadline) still counts as dropped
    const dropped = this.#pending.length + 1;
    this.#pending.length = 0;
    this.#log.warn("Dropped {dropped} pending Event writes at stop (grace {graceMs} ms)", {
      dropped,
      graceMs,
      component: this.#component,
    });
    return dropped;
  }

  #record(ref: V1ObjectReference, type: string, reason: string, message: string): void {
    const now = this.#clock.now();
    // cluster-scoped objects (Nodes, PVs) have their events in `default`, as client-go does
    const namespace = ref.namespace || "default";
    const key = JSON.stringify([
      ref.uid || "",
      ref.kind,
      namespace,
      ref.name,
      type,
      reason,
      message,
    ]);
    // client-go's spam key: the source and the involved object, not the type, reason or message
    const allowed = this.#spam.allow(
      JSON.stringify([
        ref.kind,
        ref.namespace ?? "",
        ref.name,
        ref.uid ?? "",
        ref.apiVersion ?? "",
      ]),
      now,
    );
    const seen = this.#seen.get(key);
    this.#seen.delete(key);
    if (seen && now - seen.lastSeen <= AGGREGATION_WINDOW_MS) {
      seen.count++;
      seen.lastSeen = now;
      this.#seen.set(key, seen);
      if (!allowed) return;
      if (!seen.written) {
        seen.written = true;
        seen.event = {
          ...seen.event,
          count: seen.count,
          lastTimestamp: new Date(Math.floor(now / 1000) * 1000),
        };
        this.#enqueue(key, seen, () => this.#create(key, seen));
        return;
      }
      const patch = { count: seen.count, lastTimestamp: kubeTime(now) };
      this.#enqueue(key, seen, () => this.#patch(key, seen, patch));
      return;
    }
    const stamp = new Date(Math.floor(now / 1000) * 1000);
    const event: CoreV1Event = {
      metadata: { name: this.#eventName(ref.name ?? "", now), namespace },
      involvedObject: ref,
      type,
      reason,
      message,
      source: { component: this.#component, ...(this.#host ? { host: this.#host } : {}) },
      firstTimestamp: stamp,
      lastTimestamp: stamp,
      count: 1,
      reportingComponent: this.#component,
      reportingInstance: this.#host,
    };
    const entry: Seen = {
      namespace,
      name: event.metadata.name!,
      count: 1,
      lastSeen: now,
      event,
      written: allowed,
    };
    this.#seen.set(key, entry);
    this.#prune(now);
    if (allowed) this.#enqueue(key, entry, () => this.#create(key, entry));
  }

  async #create(key: string, entry: Seen): Promise<void> {
    try {
      await this.#sink.create(entry.namespace, entry.event);
    } catch (error) {
      // the next repeat must create again, not patch an Event that does not exist
      if (this.#seen.get(key) === entry) this.#seen.delete(key);
      this.#log.warn("Cannot create event {namespace}/{name} ({reason}): {error}", {
        namespace: entry.namespace,
        name: entry.name,
        reason: entry.event.reason,
        error,
      });
    }
  }

  async #patch(
    key: string,
    entry: Seen,
    patch: { count: number; lastTimestamp: string },
  ): Promise<void> {
    try {
      await this.#sink.patch(entry.namespace, entry.name, patch);
    } catch (error) {
      if (isNotFound(error)) {
        // deleted meanwhile (events expire after an hour by default): start a new one
        const now = this.#clock.now();
        entry.name = this.#eventName(entry.event.involvedObject.name ?? "", now);
        entry.event = {
          ...entry.event,
          metadata: { ...entry.event.metadata, name: entry.name },
          count: patch.count,
          lastTimestamp: new Date(patch.lastTimestamp),
        };
        return this.#create(key, entry);
      }
      this.#log.warn("Cannot update event {namespace}/{name} ({reason}): {error}", {
        namespace: entry.namespace,
        name: entry.name,
        reason: entry.event.reason,
        error,
      });
    }
  }

  #enqueue(key: string, entry: Seen, write: () => Promise<void>): void {
    if (this.#pending.length >= this.#maxPending) {
      if (entry.count === 1 && this.#seen.get(key) === entry) this.#seen.delete(key);
      this.#dropped++;
      const now = this.#clock.now();
      // a storm (thousands of Services updated at once) must not become a storm of log lines
      if (now - this.#droppedLoggedAt >= DROP_LOG_INTERVAL_MS) {
        this.#log.warn(
          "Dropping events: {dropped} dropped (the last {reason} on {object}), {pending} writes already queued",
          {
            dropped: this.#dropped,
            reason: entry.event.reason,
            object: `${entry.event.involvedObject.kind}/${entry.event.involvedObject.name}`,
            pending: this.#pending.length,
          },
        );
        this.#droppedLoggedAt = now;
        this.#dropped = 0;
      }
      return;
    }
    this.#pending.push(write);
    this.#draining ??= this.#drain();
  }

  async #drain(): Promise<void> {
    try {
      for (let write = this.#pending.shift(); write; write = this.#pending.shift()) {
        await write();
      }
    } finally {
      this.#draining = undefined;
    }
  }

  #prune(now: number): void {
    for (const [key, seen] of this.#seen) {
      // Map order is least recently seen first, so stop at the first one still wanted
      if (this.#seen.size <= MAX_CACHE_ENTRIES && now - seen.lastSeen <= AGGREGATION_WINDOW_MS) {
        break;
      }
      this.#seen.delete(key);
    }
  }

  #eventName(objectName: string, now: number): string {
    // client-go: `<name>.<unix nanoseconds in hex>`; a counter keeps names unique within one ms
    const nanos = BigInt(now) * 1_000_000n + BigInt(this.#seq++ % 1_000_000);
    return `${objectName}.${nanos.toString(16)}`;
  }
}

/**
 * The ObjectReference of an event target (a flat reference or an object with metadata).
 * @param target the involved object
 * @returns kind, apiVersion, name, namespace, uid and resourceVersion where known
 */
export function objectReference(target: EventTarget): V1ObjectReference {
  if (!("metadata" in target)) return { ...target };
  const meta = target.metadata ?? {};
  const ref: V1ObjectReference = { kind: target.kind, name: meta.name ?? "" };
  if (target.apiVersion) ref.apiVersion = target.apiVersion;
  if (meta.namespace) ref.namespace = meta.namespace;
  if (meta.uid) ref.uid = meta.uid;
  if (meta.resourceVersion) ref.resourceVersion = meta.resourceVersion;
  return ref;
}

/** RFC 3339 with whole seconds, the format of metav1.Time. */
function kubeTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}
