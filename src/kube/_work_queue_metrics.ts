/**
 * client-go's workqueue metrics (upstream names, label `name`), kept per work queue. Several
 * queues share one set of metric objects per Registry, because a Registry refuses a second metric
 * of the same name.
 *
 * @module
 */
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { Clock } from "./clock.ts";
import { declareOnce } from "../metrics/registry.ts";

/** What a WorkQueue reports to its metrics. */
export interface QueueMetrics {
  /** A key entered the dirty set. */
  add(key: string): void;
  /** A key was handed to a worker. */
  get(key: string): void;
  /** A worker finished a key. */
  done(key: string): void;
  /** A key was scheduled for a later add (`addAfter`, `addRateLimited`). */
  retry(): void;
  /** The queue shut down; stop reporting its unfinished work. */
  close(): void;
}

/** client-go's buckets: 10 ns up to 1000 s, a factor 10 apart. */
const DURATION_BUCKETS = Array.from({ length: 12 }, (_, i) => 1e-8 * 10 ** i);

interface MetricSet {
  depth: Gauge;
  adds: Counter;
  queueDuration: Histogram;
  workDuration: Histogram;
  unfinished: Gauge;
  longest: Gauge;
  retries: Counter;
  live: Set<QueueMetricsImpl>;
}

// Memo of the shared metric objects of each Registry (not configuration: a cache keyed by the
// registry the caller passed, dropped with it).
const SETS = new WeakMap<Registry, MetricSet>();

function metricSet(registry: Registry): MetricSet {
  const existing = SETS.get(registry);
  if (existing) return existing;
  const registers = [registry];
  const labelNames = ["name"];
  const live = new Set<QueueMetricsImpl>();
  const set: MetricSet = {
    live,
    depth: declareOnce(registry, "workqueue_depth", () =>
      new Gauge({
        name: "workqueue_depth",
        help: "Current depth of workqueue",
        labelNames,
        registers,
      })),
    adds: declareOnce(registry, "workqueue_adds_total", () =>
      new Counter({
        name: "workqueue_adds_total",
        help: "Total number of adds handled by workqueue",
        labelNames,
        registers,
      })),
    queueDuration: declareOnce(registry, "workqueue_queue_duration_seconds", () =>
      new Histogram({
        name: "workqueue_queue_duration_seconds",
        help: "How long in seconds an item stays in workqueue before being requested.",
        labelNames,
        buckets: DURATION_BUCKETS,
        registers,
      })),
    workDuration: declareOnce(registry, "workqueue_work_duration_seconds", () =>
      new Histogram({
        name: "workqueue_work_duration_seconds",
        help: "How long in seconds processing an item from workqueue takes.",
        labelNames,
        buckets: DURATION_BUCKETS,
        registers,
      })),
    unfinished: declareOnce(registry, "workqueue_unfinished_work_seconds", () =>
      new Gauge({
        name: "workqueue_unfinished_work_seconds",
        help: "How many seconds of work has done that is in progress and hasn't been observed by " +
          "work_duration. Large values indicate stuck threads. One can deduce the number of stuck " +
          "threads by observing the rate at which this increases.",
        labelNames,
        registers,
        // computed at scrape time instead of upstream's 500 ms ticker: no timer to leak
        collect(): void {
          for (const q of live) this.set({ name: q.name }, q.unfinishedSeconds());
        },
      })),
    longest: declareOnce(registry, "workqueue_longest_running_processor_seconds", () =>
      new Gauge({
        name: "workqueue_longest_running_processor_seconds",
        help: "How many seconds has the longest running processor for workqueue been running.",
        labelNames,
        registers,
        collect(): void {
          for (const q of live) this.set({ name: q.name }, q.longestSeconds());
        },
      })),
    retries: declareOnce(registry, "workqueue_retries_total", () =>
      new Counter({
        name: "workqueue_retries_total",
        help: "Total number of retries handled by workqueue",
        labelNames,
        registers,
      })),
  };
  SETS.set(registry, set);
  return set;
}

class QueueMetricsImpl implements QueueMetrics {
  readonly name: string;
  #set: MetricSet;
  #clock: Clock;
  #addTimes = new Map<string, number>();
  #startTimes = new Map<string, number>();

  constructor(set: MetricSet, name: string, clock: Clock) {
    this.#set = set;
    this.name = name;
    this.#clock = clock;
    set.live.add(this);
    // make the series exist (at 0) before the first add, as upstream does for counters it touches
    set.depth.set({ name }, 0);
    set.adds.inc({ name }, 0);
    set.retries.inc({ name }, 0);
  }

  add(key: string): void {
    this.#set.adds.inc({ name: this.name });
    this.#set.depth.inc({ name: this.name });
    if (!this.#addTimes.has(key)) this.#addTimes.set(key, this.#clock.now());
  }

  get(key: string): void {
    this.#set.depth.dec({ name: this.name });
    const now = this.#clock.now();
    this.#startTimes.set(key, now);
    const added = this.#addTimes.get(key);
    if (added !== undefined) {
      this.#set.queueDuration.observe({ name: this.name }, (now - added) / 1000);
      this.#addTimes.delete(key);
    }
  }

  done(key: string): void {
    const started = this.#startTimes.get(key);
    if (started === undefined) return;
    this.#set.workDuration.observe({ name: this.name }, (this.#clock.now() - started) / 1000);
    this.#startTimes.delete(key);
  }

  retry(): void {
    this.#set.retries.inc({ name: this.name });
  }

  close(): void {
    this.#set.live.delete(this);
  }

  unfinishedSeconds(): number {
    const now = this.#clock.now();
    let total = 0;
    for (const started of this.#startTimes.values()) total += now - started;
    return total / 1000;
  }

  longestSeconds(): number {
    const now = this.#clock.now();
    let longest = 0;
    for (const started of this.#startTimes.values()) longest = Math.max(longest, now - started);
    return longest / 1000;
  }
}

/**
 * Makes the series of a queue that does not exist yet appear at zero (every family, as upstream
 * exposes them from a queue's creation), so alerts and dashboards see the queue of every enabled
 * controller from the agent's start, before any API connection and on hosts that do not lead.
 * A queue already running keeps its values.
 * @param registry the process's registry
 * @param name the queue name, the `name` label
 */
export function declareQueueMetrics(registry: Registry, name: string): void {
  const set = metricSet(registry);
  if ([...set.live].some((q) => q.name === name)) return;
  const labels = { name };
  set.depth.set(labels, 0);
  set.adds.inc(labels, 0);
  set.retries.inc(labels, 0);
  set.queueDuration.zero(labels);
  set.workDuration.zero(labels);
  set.unfinished.set(labels, 0);
  set.longest.set(labels, 0);
}

const NOOP: QueueMetrics = {
  add: () => {},
  get: () => {},
  done: () => {},
  retry: () => {},
  close: () => {},
};

/**
 * The metrics of one queue, or a no-op when no registry is given.
 * @param registry where to register (shared by all queues of that registry)
 * @param name the queue name, the `name` label
 * @param clock time source for durations
 * @returns the queue's metrics
 */
export function queueMetrics(
  registry: Registry | undefined,
  name: string,
  clock: Clock,
): QueueMetrics {
  return registry ? new QueueMetricsImpl(metricSet(registry), name, clock) : NOOP;
}
