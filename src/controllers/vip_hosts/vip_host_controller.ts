/**
 * The leader's view of the data plane: from the Services' VIPs and every host's heartbeat Lease,
 * which host serves each VIP. Records `VIPHostChanged`, `VIPNotServed` and `VIPSplitBrain` Events
 * on the Services (`decide_vip_hosts.ts`) and exports `keelson_vip_serving_hosts{vip,service}`,
 * `keelson_vip_host_changes_total{vip,service}`, `keelson_vip_warnings_total{vip,service,reason}`
 * and `keelson_host_heartbeat_age_seconds{host}`. Runs only while this process leads; it writes
 * nothing but Events. A heartbeat left by a retired host (silent, no longer in the inventory)
 * counts for nothing here and has no age series (the missing-heartbeat alert reads it): only
 * `keelson_host_heartbeat_retired{host}` shows it, until someone deletes the Lease.
 *
 * @module
 */
import type { V1Lease, V1Service } from "@kubernetes/client-node";
import { Counter, Gauge, type Registry } from "prom-client";
import { declareOnce } from "../../metrics/registry.ts";
import type { EventRecorder, Informer } from "../../kube/ports.ts";
import { delay } from "../../kube/delay.ts";
import { Wakeable } from "../../kube/wakeable_delay.ts";
import { logger } from "../../log/logging.ts";
import { canonicalIp } from "../../net/ip.ts";
import {
  anyDataPlaneReported,
  bgpHostsByVip,
  lastSeenOnSilentHosts,
  observeHeartbeats,
  partialHosts,
  servingHostsByVip,
} from "../../status/heartbeats.ts";
import { RecordObserver } from "../../status/observed_freshness.ts";
import { splitRetired } from "../../status/retired_heartbeats.ts";
import { VIP_HOST_CHANGED, VipHostDecider, type VipObservation } from "./decide_vip_hosts.ts";

/** Gauge name (also used by the monitoring rules). */
export const VIP_SERVING_HOSTS_METRIC = "keelson_vip_serving_hosts";
/** Counter name. */
export const VIP_HOST_CHANGES_METRIC = "keelson_vip_host_changes_total";
/** Warnings recorded (no host, split brain). */
export const VIP_WARNINGS_METRIC = "keelson_vip_warnings_total";
/** Seconds since each host's last heartbeat (leader only). */
export const HEARTBEAT_AGE_METRIC = "keelson_host_heartbeat_age_seconds";
/** 1 per heartbeat Lease left by a retired host (leader only). */
export const HEARTBEAT_RETIRED_METRIC = "keelson_host_heartbeat_retired";

/** What the controller reads and writes. */
export interface VipHostControllerDeps {
  services: Informer<V1Service>;
  /** Leases of the heartbeat namespace. */
  leases: Informer<V1Lease>;
  events: EventRecorder;
  /** Whether Keelson handles a Service (class filter). */
  handles: (service: V1Service) => boolean;
  registry: Registry;
  /**
   * The hosts of the inventory in force (`inventoryHosts`): a silent heartbeat of any other host
   * is retired. @default () => undefined (nothing is retired)
   */
  inventory?: () => ReadonlySet<string> | undefined;
  /**
   * This process's memory of when each heartbeat last changed, shared with the other readers of
   * the heartbeats (the pod routes). @default a new one on `now`
   */
  observer?: RecordObserver;
  /** The reader's monotonic clock (ms), when no observer is given. @default performance.now */
  now?: () => number;
}

/** Options of the controller. */
export interface VipHostControllerOptions {
  /** How long no host or several must last before a Warning. @default 3000 */
  graceMs?: number;
  /** Re-evaluation period (heartbeats expire without any API event). @default 1000 */
  periodMs?: number;
}

// The canonical ingress addresses of each cached Service object. An informer replaces the object
// on every change, so the object itself is the key: each evaluation (after every Service event)
// parses only the Services that changed since the last one.
const VIPS = new WeakMap<V1Service, string[]>();

function serviceVips(service: V1Service): string[] {
  let vips = VIPS.get(service);
  if (vips === undefined) {
    vips = [];
    for (const ingress of service.status?.loadBalancer?.ingress ?? []) {
      const vip = ingress.ip ? canonicalIp(ingress.ip) : undefined;
      if (vip) vips.push(vip);
    }
    VIPS.set(service, vips);
  }
  return vips;
}

/** Watches heartbeats and Services and reports VIP hosts. */
export class VipHostController {
  #deps: VipHostControllerDeps;
  #options: VipHostControllerOptions;
  #decider: VipHostDecider;
  #observer: RecordObserver;
  #serving: Gauge<"vip" | "service">;
  #changes: Counter<"vip" | "service">;
  #age: Gauge<"host">;
  #retired: Gauge<"host">;
  #warnings: Counter<"vip" | "service" | "reason">;
  #log = logger("controllers", "vip-hosts");

  /** @param deps caches, recorder, class filter, registry @param options timings */
  constructor(deps: VipHostControllerDeps, options: VipHostControllerOptions = {}) {
    this.#deps = deps;
    this.#options = options;
    this.#decider = new VipHostDecider(options.graceMs ?? 3000);
    this.#observer = deps.observer ?? new RecordObserver(deps.now);
    this.#serving = declareOnce(
      deps.registry,
      VIP_SERVING_HOSTS_METRIC,
      () =>
        new Gauge({
          name: VIP_SERVING_HOSTS_METRIC,
          help: "Hosts serving each VIP, from their heartbeats (leader only): 1 is healthy, " +
            "0 means nobody serves it, 2 or more is a split brain.",
          labelNames: ["vip", "service"],
          registers: [deps.registry],
        }),
    );
    this.#age = declareOnce(
      deps.registry,
      HEARTBEAT_AGE_METRIC,
      () =>
        new Gauge({
          name: HEARTBEAT_AGE_METRIC,
          help: "Seconds since each host last renewed its heartbeat Lease (leader only).",
          labelNames: ["host"],
          registers: [deps.registry],
        }),
    );
    this.#retired = declareOnce(
      deps.registry,
      HEARTBEAT_RETIRED_METRIC,
      () =>
        new Gauge({
          name: HEARTBEAT_RETIRED_METRIC,
          help: "1 for each heartbeat Lease left by a host no longer in the inventory, silent " +
            "(leader only): it counts for nothing; delete it with kubectl -n kube-system " +
            "delete lease keelson-host-<host>.",
          labelNames: ["host"],
          registers: [deps.registry],
        }),
    );
    this.#warnings = declareOnce(
      deps.registry,
      VIP_WARNINGS_METRIC,
      () =>
        new Counter({
          name: VIP_WARNINGS_METRIC,
          help: "VIPNotServed and VIPSplitBrain Warnings recorded by the leader, by reason.",
          labelNames: ["vip", "service", "reason"],
          registers: [deps.registry],
        }),
    );
    this.#changes = declareOnce(
      deps.registry,
      VIP_HOST_CHANGES_METRIC,
      () =>
        new Counter({
          name: VIP_HOST_CHANGES_METRIC,
          help: "Times the host serving a VIP changed, as seen by the leader.",
          labelNames: ["vip", "service"],
          registers: [deps.registry],
        }),
    );
  }

  /**
   * Evaluates once: computes the observations, records Events, sets the metrics.
   * @returns the observations (for tests)
   */
  evaluate(): VipObservation[] {
    const now = this.#observer.now();
    // a retired host's heartbeat counts for nothing: not served by it, not silent, not aged
    const { current: heartbeats, retired } = splitRetired(
      observeHeartbeats(this.#deps.leases.list(), this.#observer, this.#deps.leases.hasSynced()),
      this.#deps.inventory?.(),
    );
    const hostsByVip = servingHostsByVip(heartbeats);
    // hosts not seen renewing (silent, or not yet since this leader started) make their VIPs
    // unknown, never served nor unserved
    const silentByVip = lastSeenOnSilentHosts(heartbeats);
    // since this leader started, some heartbeat not yet judged: a VIP's first host is recorded
    // without an Event (it is no change this leader saw)
    const settling = heartbeats.some((h) => h.observed.freshness === "unobserved");
    this.#age.reset();
    for (const h of heartbeats) {
      // by this leader's observation: since it saw the Lease renewed (or, never, first read it)
      this.#age.set({ host: h.host }, h.observed.ageMs / 1000);
    }
    this.#retired.reset();
    for (const h of retired) this.#retired.set({ host: h.host }, 1);
    // nobody reports a data plane (no keepalived under Keelson): nothing to judge, no Warnings,
    // and no reason to read every Service (this runs after every Service event)
    if (!anyDataPlaneReported(heartbeats)) {
      this.#serving.reset();
      return [];
    }
    const servicesByVip = new Map<string, { key: string; service: V1Service }[]>();
    for (const service of this.#deps.services.list()) {
      if (!this.#deps.handles(service)) continue;
      const key = `${service.metadata?.namespace ?? ""}/${service.metadata?.name ?? ""}`;
      for (const vip of serviceVips(service)) {
        const list = servicesByVip.get(vip) ?? [];
        if (!list.some((s) => s.key === key)) list.push({ key, service });
        servicesByVip.set(vip, list);
      }
    }
    // a VIP announced over BGP is served by every announcing host (ECMP): not judged here
    const overBgp = bgpHostsByVip(heartbeats);
    // a host whose report was cut at its size limit may hold a VIP nobody lists: unknown
    const partial = partialHosts(heartbeats);
    const observations: VipObservation[] = [...servicesByVip].filter(([vip]) => !overBgp.has(vip))
      .map(([vip, services]) => {
        const hosts = hostsByVip.get(vip) ?? [];
        const silent = silentByVip.get(vip) ?? [];
        return {
          vip,
          services: services.map((s) => s.key).sort(),
          hosts,
          lastSeenOn: hosts.length === 0 ? [...new Set([...silent, ...partial])].sort() : silent,
        };
      });
    const events = this.#decider.step(observations, now, { settling });
    for (const event of events) {
      const target = servicesByVip.get(event.vip)?.find((s) => s.key === event.service)?.service;
      if (!target) continue;
      // cached objects carry no kind: the reference names it
      this.#deps.events.event(
        { kind: "Service", apiVersion: "v1", metadata: target.metadata ?? {} },
        event.type,
        event.reason,
        event.message,
      );
      if (event.reason === VIP_HOST_CHANGED) {
        this.#changes.inc({ vip: event.vip, service: event.service });
      } else {
        this.#warnings.inc({ vip: event.vip, service: event.service, reason: event.reason });
      }
      if (event.type === "Warning") this.#log.warn("{service}: {message}", { ...event });
      else this.#log.info("{service}: {message}", { ...event });
    }
    this.#serving.reset();
    for (const o of observations) {
      for (const service of o.services) {
        this.#serving.set({ vip: o.vip, service }, o.hosts.length);
      }
    }
    for (const [vip, services] of servicesByVip) {
      const hosts = overBgp.get(vip);
      if (!hosts) continue;
      for (const { key } of services) this.#serving.set({ vip, service: key }, hosts.length);
    }
    return observations;
  }

  /**
   * Runs until `signal` aborts: evaluates after every change of either cache (coalesced) and
   * every period.
   * @param signal stops it (leadership lost or process stopping)
   */
  async run(signal: AbortSignal): Promise<void> {
    if (!(await this.#deps.services.waitForSync(signal))) return;
    if (!(await this.#deps.leases.waitForSync(signal))) return;
    const wakeable = new Wakeable();
    const poke = () => wakeable.wake();
    const unsubscribe = [
      this.#deps.services.subscribe(poke),
      this.#deps.leases.subscribe(poke),
    ];
    try {
      while (!signal.aborted) {
        try {
          this.evaluate();
        } catch (error) {
          this.#log.error("Evaluating VIP hosts failed: {error}", { error: String(error) });
        }
        const now = this.#observer.now();
        const deadline = this.#decider.nextDeadline();
        const period = this.#options.periodMs ?? 1000;
        const wait = deadline === undefined
          ? period
          : Math.max(10, Math.min(period, deadline - now));
        await wakeable.wait(wait, signal);
        // coalesce a burst of informer events into one evaluation
        await delay(20, signal);
      }
    } finally {
      for (const u of unsubscribe) u();
      this.#serving.reset();
      this.#age.reset();
      this.#retired.reset();
    }
  }
}
