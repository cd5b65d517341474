/**
 * Leader election on a `coordination.k8s.io/v1` Lease with client-go's semantics
 * (k8s.io/client-go/tools/leaderelection), so Keelson and upstream components read each other's
 * Leases the same way:
 *
 * - A candidate takes the Lease when it is absent, has an empty holder, is already ours, or has
 *   expired. Expiry is judged by **our own clock**: the record is expired when it has not changed
 *   for `leaseDurationSeconds` since we last saw it change (the remote renewTime is never compared
 *   with our clock, so clock skew between hosts does not matter).
 * - The leader renews every `retryPeriod`. A renewal round that has not succeeded within
 *   `renewDeadline` loses leadership: `leaderSignal` aborts at once.
 * - On shutdown (the run signal aborts) the leader releases the Lease (empty holder, 1 s duration,
 *   client-go's ReleaseOnCancel), so a standby takes over within one retry period.
 *
 * @module
 */
import { MicroTime as V1MicroTime } from "./micro_time.ts";
import type { V1Lease, V1LeaseSpec } from "@kubernetes/client-node";
import type { Registry } from "prom-client";
import { logger } from "../log/logging.ts";
import { type ElectionMetrics, electionMetrics } from "./_leader_election_metrics.ts";
import { type Clock, systemClock } from "./clock.ts";
import { delay } from "./delay.ts";
import { defaultIdentity, validateElectorOptions } from "./elector_options.ts";
import { recordKey, timeMs } from "./lease_record.ts";
import type { LeaseApi } from "./lease_api.ts";
import { isConflict } from "./ports.ts";

export type { LeaseApi } from "./lease_api.ts";
export { declareElectionMetrics } from "./_leader_election_metrics.ts";

/** Options of a `LeaderElector`. Durations are milliseconds. */
export interface LeaderElectorOptions {
  /** Namespace of the Lease, e.g. `kube-system`. */
  namespace: string;
  /** Name of the Lease, e.g. `keelson`; also the `name` label of the metrics. */
  name: string;
  /** This candidate's identity. @default `<hostname>_<random UUID>` */
  identity?: string;
  /** How long a Lease stays valid without renewal (at least 1000). Upstream default 15000. */
  leaseDurationMs: number;
  /** How long the leader keeps retrying a renewal before giving up. Upstream default 10000. */
  renewDeadlineMs: number;
  /** Pause between attempts. Upstream default 2000. */
  retryPeriodMs: number;
  /** Where `leader_election_master_status` and `leader_election_slowpath_total` go. */
  registry?: Registry;
  /** Time source. @default systemClock() */
  clock?: Clock;
  /** Acquire retries wait `retryPeriod * (1 + jitterFactor * random())`. @default 1.2 (client-go) */
  jitterFactor?: number;
  /** Random source for the jitter. @default Math.random */
  random?: () => number;
  /** `healthCheck` fails when a leader has not renewed for leaseDuration + this. @default 20000 */
  healthToleranceMs?: number;
}

/** What the elector calls as leadership changes. */
export interface LeaderCallbacks {
  /**
   * We became the leader. Start the controllers; stop them when `leaderSignal` aborts (leadership
   * lost, or shutdown). `run()` waits (up to renewDeadline) for a returned promise before
   * releasing the Lease, so controllers can stop writing first.
   */
  onStartedLeading(leaderSignal: AbortSignal): void | Promise<void>;
  /** We were the leader and are not any more (called once, after `leaderSignal` aborted). */
  onStoppedLeading(): void;
  /** The observed holder changed (ourselves included). */
  onNewLeader?(identity: string): void;
}

/** client-go's default durations. */
export const LEADER_ELECTION_DEFAULTS = {
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
} as const;

/** Campaigns for one Lease and reports leadership through callbacks and `isLeader()`. */
export class LeaderElector {
  /** This candidate's identity (the Lease's holderIdentity while we lead). */
  readonly identity: string;
  readonly #api: LeaseApi;
  readonly #namespace: string;
  readonly #name: string;
  readonly #leaseDurationMs: number;
  readonly #renewDeadlineMs: number;
  readonly #retryPeriodMs: number;
  readonly #jitterFactor: number;
  readonly #random: () => number;
  readonly #healthToleranceMs: number;
  readonly #clock: Clock;
  readonly #metrics: ElectionMetrics;
  readonly #log = logger("leader-election");
  /** The last Lease read or written (carries the resourceVersion for the next write). */
  #observed: V1Lease | undefined;
  #observedKey = "";
  /** When (our clock) the observed record last changed. */
  #observedTimeMs = 0;
  #reportedLeader = "";
  #lastRenewMs: number | undefined;
  #leading = false;
  #running = false;
  /** Bumped whenever an attempt is abandoned, so its late answer cannot change our state. */
  #generation = 0;

  /**
   * @param api the Lease port (`createLeaseApi(client.rest)`)
   * @param options Lease, durations, identity, metrics registry, clock
   * @throws {RangeError} when the durations are inconsistent (same rules as client-go)
   */
  constructor(api: LeaseApi, options: LeaderElectorOptions) {
    const jitterFactor = options.jitterFactor ?? 1.2;
    validateElectorOptions(options, jitterFactor);
    this.#api = api;
    this.#namespace = options.namespace;
    this.#name = options.name;
    this.identity = options.identity ?? defaultIdentity();
    this.#leaseDurationMs = options.leaseDurationMs;
    this.#renewDeadlineMs = options.renewDeadlineMs;
    this.#retryPeriodMs = options.retryPeriodMs;
    this.#jitterFactor = jitterFactor;
    this.#random = options.random ?? Math.random;
    this.#healthToleranceMs = options.healthToleranceMs ?? 20_000;
    this.#clock = options.clock ?? systemClock();
    this.#metrics = electionMetrics(options.registry, options.name);
  }

  /** @returns true from acquiring the Lease until leadership is lost or released */
  isLeader(): boolean {
    return this.#leading;
  }

  /** @returns when (clock ms) we last created or renewed the Lease as holder, if ever */
  lastRenewMs(): number | undefined {
    return this.#lastRenewMs;
  }

  /** @returns the holder we last saw in the Lease ("" when none or not read yet) */
  observedLeader(): string {
    return this.#observed?.spec?.holderIdentity ?? "";
  }

  /**
   * Upstream's leader-election health check: unhealthy only when we believe we lead but the Lease
   * has not been renewed for leaseDuration + the tolerance (20 s), e.g. a wedged renew loop.
   * @returns ok, or not ok with the reason
   */
  healthCheck(): { ok: boolean; reason?: string } {
    if (!this.#leading) return { ok: true };
    const sinceMs = this.#clock.now() - this.#observedTimeMs;
    if (sinceMs > this.#leaseDurationMs + this.#healthToleranceMs) {
      return {
        ok: false,
        reason: `failed election to renew leadership on lease ${this.#leaseRef()}: ` +
          `last renewal ${Math.round(sinceMs)} ms ago`,
      };
    }
    return { ok: true };
  }

  /**
   * Campaigns until we lead, leads until leadership is lost or `signal` aborts, then returns.
   * After a loss the caller should exit (as upstream components do) or call `run` again.
   * @param signal aborts the campaign; a leader then releases the Lease before `run` resolves
   * @param callbacks started/stopped leading, new leader
   * @throws {Error} when this elector is already running
   */
  async run(signal: AbortSignal, callbacks: LeaderCallbacks): Promise<void> {
    if (this.#running) {
      throw new Error(`Cannot run leader election for lease ${this.#leaseRef()} twice at once`);
    }
    this.#running = true;
    try {
      this.#log.info("Attempting to acquire leader lease {lease}", { lease: this.#leaseRef() });
      if (!(await this.#acquire(signal, callbacks))) return;
      if (signal.aborted) {
        await this.#release();
        return;
      }
      this.#log.info("Successfully acquired lease {lease} as {identity}", {
        lease: this.#leaseRef(),
        identity: this.identity,
      });
      await this.#lead(signal, callbacks);
    } finally {
      this.#running = false;
    }
  }

  async #lead(signal: AbortSignal, callbacks: LeaderCallbacks): Promise<void> {
    this.#leading = true;
    this.#metrics.leading(true);
    const leader = new AbortController();
    const onAbort = () => leader.abort(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    let started: Promise<void>;
    try {
      started = Promise.resolve(callbacks.onStartedLeading(leader.signal)).catch((error) => {
        this.#log.error("onStartedLeading failed: {error}", { error });
      });
    } catch (error) {
      this.#log.error("onStartedLeading failed: {error}", { error });
      started = Promise.resolve();
    }
    const outcome = await this.#renewLoop(signal, callbacks);
    signal.removeEventListener("abort", onAbort);
    this.#leading = false;
    this.#metrics.leading(false);
    leader.abort(new Error(`Leadership of lease ${this.#leaseRef()} ended: ${outcome}`));
    if (outcome === "lost") {
      this.#log.error("Failed to renew lease {lease}: leadership lost", {
        lease: this.#leaseRef(),
      });
    }
    // Let the controllers stop writing before another instance can take over.
    await this.#bounded(started, this.#renewDeadlineMs);
    if (outcome === "shutdown") await this.#release();
    try {
      callbacks.onStoppedLeading();
    } catch (error) {
      this.#log.error("onStoppedLeading failed: {error}", { error });
    }
  }

  async #acquire(signal: AbortSignal, callbacks: LeaderCallbacks): Promise<boolean> {
    while (!signal.aborted) {
      const acquired = await this.#attempt(this.#renewDeadlineMs, signal);
      this.#reportLeader(callbacks);
      if (acquired) return true;
      const jitter = this.#jitterFactor * this.#random() * this.#retryPeriodMs;
      await delay(this.#retryPeriodMs + jitter, signal, this.#clock);
    }
    return false;
  }

  /** Renews until a round fails (`lost`), another holder shows up (`lost`) or shutdown. */
  async #renewLoop(
    signal: AbortSignal,
    callbacks: LeaderCallbacks,
  ): Promise<"lost" | "shutdown"> {
    for (;;) {
      await delay(this.#retryPeriodMs, signal, this.#clock);
      if (signal.aborted) return "shutdown";
      const deadline = this.#clock.now() + this.#renewDeadlineMs;
      let renewed = false;
      while (!renewed) {
        const remaining = deadline - this.#clock.now();
        if (remaining <= 0) return "lost";
        renewed = await this.#attempt(remaining, signal);
        this.#reportLeader(callbacks);
        if (signal.aborted) return "shutdown";
        if (renewed) break;
        const holder = this.observedLeader();
        if (holder !== "" && holder !== this.identity) {
          // Stricter than client-go (which waits out renewDeadline): someone else holds it now.
          this.#log.warn("Lease {lease} is now held by {holder}", {
            lease: this.#leaseRef(),
            holder,
          });
          return "lost";
        }
        const left = deadline - this.#clock.now();
        if (left <= 0) return "lost";
        await delay(Math.min(this.#retryPeriodMs, left), signal, this.#clock);
      }
    }
  }

  /** One tryAcquireOrRenew, abandoned after `timeoutMs` or on abort (counts as failure). */
  async #attempt(timeoutMs: number, signal: AbortSignal): Promise<boolean> {
    const generation = this.#generation;
    const stop = new AbortController();
    const either = AbortSignal.any([signal, stop.signal]);
    const timedOut = delay(timeoutMs, either, this.#clock).then(() => false);
    try {
      const result = await Promise.race([this.#tryAcquireOrRenew(generation), timedOut]);
      return result && generation === this.#generation;
    } finally {
      stop.abort();
      this.#generation++;
    }
  }

  #setObserved(lease: V1Lease, generation: number): boolean {
    if (generation !== this.#generation) return false;
    this.#observed = lease;
    this.#observedKey = recordKey(lease);
    this.#observedTimeMs = this.#clock.now();
    return true;
  }

  #holdsObserved(): boolean {
    return this.observedLeader() === this.identity;
  }

  #spec(base: V1LeaseSpec | undefined, now: number, fields: Partial<V1LeaseSpec>): V1LeaseSpec {
    return {
      ...base,
      holderIdentity: this.identity,
      leaseDurationSeconds: Math.floor(this.#leaseDurationMs / 1000),
      acquireTime: new V1MicroTime(now),
      renewTime: new V1MicroTime(now),
      leaseTransitions: 0,
      ...fields,
    };
  }

  /** client-go's tryAcquireOrRenew. Never throws: an API error is logged and counts as failure. */
  async #tryAcquireOrRenew(generation: number): Promise<boolean> {
    const now = this.#clock.now();
    const lease = this.#leaseRef();
    // 1. Fast path: the leader updates optimistically from the Lease it wrote last.
    if (this.#holdsObserved() && this.#observedTimeMs + this.#leaseDurationMs > now) {
      const base = this.#observed!;
      const spec = this.#spec(base.spec, now, {
        acquireTime: new V1MicroTime(timeMs(base.spec?.acquireTime) ?? now),
        leaseTransitions: base.spec?.leaseTransitions ?? 0,
      });
      try {
        const updated = await this.#api.replace({ ...base, spec });
        return this.#renewed(updated, generation, now);
      } catch (error) {
        this.#log.info(
          "Failed to update lease {lease} optimistically, falling back to slow path: {error}",
          {
            lease,
            error,
          },
        );
      }
    }
    // 2. Read (or create) the Lease.
    let current: V1Lease | undefined;
    try {
      current = await this.#api.read(this.#namespace, this.#name);
    } catch (error) {
      this.#log.warn("Error retrieving lease {lease}: {error}", { lease, error });
      return false;
    }
    if (!current) {
      try {
        const created = await this.#api.create({
          apiVersion: "coordination.k8s.io/v1",
          kind: "Lease",
          metadata: { namespace: this.#namespace, name: this.#name },
          spec: this.#spec(undefined, now, {}),
        });
        return this.#renewed(created, generation, now);
      } catch (error) {
        this.#log.warn("Error initially creating lease {lease}: {error}", { lease, error });
        return false;
      }
    }
    // 3. Check holder and expiry against our own clock.
    if (recordKey(current) !== this.#observedKey) {
      if (!this.#setObserved(current, generation)) return false;
    } else if (generation === this.#generation) {
      this.#observed = current; // same record; keep the freshest resourceVersion
    }
    const spec = current.spec ?? {};
    const holder = spec.holderIdentity ?? "";
    const expired = this.#observedTimeMs + (spec.leaseDurationSeconds ?? 0) * 1000 < now;
    if (holder !== "" && !expired && !this.#holdsObserved()) return false;
    // 4. Take it over, or renew it the slow way.
    let fields: Partial<V1LeaseSpec>;
    if (this.#holdsObserved()) {
      fields = {
        acquireTime: new V1MicroTime(timeMs(spec.acquireTime) ?? now),
        leaseTransitions: spec.leaseTransitions ?? 0,
      };
      this.#metrics.slowpath();
    } else {
      fields = { leaseTransitions: (spec.leaseTransitions ?? 0) + 1 };
      if (holder !== "") {
        this.#log.info("Lease {lease} held by {holder} has expired", { lease, holder });
      }
    }
    try {
      const updated = await this.#api.replace({ ...current, spec: this.#spec(spec, now, fields) });
      return this.#renewed(updated, generation, now);
    } catch (error) {
      this.#log.warn("Failed to update lease {lease}: {error}", { lease, error });
      return false;
    }
  }

  #renewed(lease: V1Lease, generation: number, now: number): boolean {
    if (!this.#setObserved(lease, generation)) return false;
    this.#lastRenewMs = now;
    return true;
  }

  /** client-go's release: empty holder, 1 s duration; one re-read if our copy was stale. */
  async #release(): Promise<void> {
    const ref = this.#leaseRef();
    let base = this.#observed;
    for (let attempt = 0; attempt < 2; attempt++) {
      if (!base || base.spec?.holderIdentity !== this.identity) return;
      const now = this.#clock.now();
      const spec: V1LeaseSpec = {
        ...base.spec,
        holderIdentity: "",
        leaseDurationSeconds: 1,
        acquireTime: new V1MicroTime(now),
        renewTime: new V1MicroTime(now),
        leaseTransitions: base.spec?.leaseTransitions ?? 0,
      };
      try {
        const released = await this.#bounded(
          this.#api.replace({ ...base, spec }),
          this.#renewDeadlineMs,
        );
        if (!released) throw new Error(`no answer within ${this.#renewDeadlineMs} ms`);
        this.#setObserved(released, this.#generation);
        this.#log.info("Released lease {lease}", { lease: ref });
        return;
      } catch (error) {
        if (!isConflict(error) || attempt > 0) {
          this.#log.warn("Failed to release lease {lease}: {error}", { lease: ref, error });
          return;
        }
        base = await this.#api.read(this.#namespace, this.#name).catch(() => undefined);
      }
    }
  }

  /** Waits for `promise`, but at most `ms` (then resolves undefined). */
  async #bounded<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
    const stop = new AbortController();
    try {
      return await Promise.race([
        promise,
        delay(ms, stop.signal, this.#clock).then(() => undefined),
      ]);
    } finally {
      stop.abort();
    }
  }

  #reportLeader(callbacks: LeaderCallbacks): void {
    const holder = this.observedLeader();
    if (holder === "" || holder === this.#reportedLeader) return;
    this.#reportedLeader = holder;
    if (holder !== this.identity) this.#log.info("New leader elected: {holder}", { holder });
    try {
      callbacks.onNewLeader?.(holder);
    } catch (error) {
      this.#log.error("onNewLeader failed: {error}", { error });
    }
  }

  #leaseRef(): string {
    return `${this.#namespace}/${this.#name}`;
  }
}
