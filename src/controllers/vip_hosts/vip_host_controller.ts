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
 * Two findings about the hosts themselves are Warnings on the host's heartbeat Lease once they
 * last (`decide_lasting.ts`): `AddressWithoutService`, a host serving an address no Service holds
 * and that is no control-plane VIP (`keelson_host_unheld_addresses{host}`), and
 * `InventoryMismatch`, a host running another inventory file than the leader
 * (`inventory_agreement.ts`; `keelson_inventory_disagreement`, `keelson_inventory_hosts{sha256}`).
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
  type Heartbeat,
  isFresh,
  lastSeenOnSilentHosts,
  observeHeartbeats,
  partialHosts,
  vipClaims,
} from "../../status/heartbeats.ts";
import { RecordObserver } from "../../status/observed_freshness.ts";
import {
  bgpAnnouncedAddresses,
  HEARTBEAT_NAMESPACE,
  heartbeatLeaseName,
  type HostReport,
} from "../../status/host_report.ts";
import { inventoryAgreement, shortDigest } from "../../status/inventory_agreement.ts";
import { LastingFindings } from "./decide_lasting.ts";
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
/** Addresses each host serves that no Service holds (leader only). */
export const UNHELD_ADDRESSES_METRIC = "keelson_host_unheld_addresses";
/** Hosts on another inventory than the leader (leader only). */
export const INVENTORY_DISAGREEMENT_METRIC = "keelson_inventory_disagreement";
/** Hosts per inventory digest (leader only). */
export const INVENTORY_HOSTS_METRIC = "keelson_inventory_hosts";
/** Warning: a host serves an address no Service holds. */
export const ADDRESS_WITHOUT_SERVICE = "AddressWithoutService";
/** Warning: a host runs another inventory than the leader. */
export const INVENTORY_MISMATCH = "InventoryMismatch";

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
  /** This (the leader's) machine name: its inventory is the reference. @default none */
  host?: string;
  /** The inventory's control-plane VIPs: served with no Service. @default none */
  controlPlaneVips?: () => readonly string[];
}

/** Options of the controller. */
export interface VipHostControllerOptions {
  /** How long no host or several must last before a Warning. @default 3000 */
  graceMs?: number;
  /** Re-evaluation period (heartbeats expire without any API event). @default 1000 */
  periodMs?: number;
  /**
   * How long a host must run another inventory before the Warning: a reload takes about 1.5 s
   * and the heartbeat renews every 2 s; the rest leaves a deploy tool time to reach every host.
   * @default 30000
   */
  inventoryGraceMs?: number;
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
  #unheld: Gauge<"host">;
  #disagreement: Gauge;
  #inventoryHosts: Gauge<"sha256">;
  #unheldFindings: LastingFindings;
  #inventoryFindings: LastingFindings;
  #log = logger("controllers", "vip-hosts");

  /** @param deps caches, recorder, class filter, registry @param options timings */
  constructor(deps: VipHostControllerDeps, options: VipHostControllerOptions = {}) {
    this.#deps = deps;
    this.#options = options;
    this.#decider = new VipHostDecider(options.graceMs ?? 3000);
    this.#unheldFindings = new LastingFindings(options.graceMs ?? 3000);
    this.#inventoryFindings = new LastingFindings(options.inventoryGraceMs ?? 30_000);
    this.#unheld = declareOnce(
      deps.registry,
      UNHELD_ADDRESSES_METRIC,
      () =>
        new Gauge({
          name: UNHELD_ADDRESSES_METRIC,
          help: "Addresses each host reports serving that no Service holds and that are no " +
            "control-plane VIP (leader only): anything above 0 is an address Keelson never gave.",
          labelNames: ["host"],
          registers: [deps.registry],
        }),
    );
    this.#disagreement = declareOnce(
      deps.registry,
      INVENTORY_DISAGREEMENT_METRIC,
      () =>
        new Gauge({
          name: INVENTORY_DISAGREEMENT_METRIC,
          help: "Hosts whose inventory file (SHA-256 in their heartbeat) differs from the " +
            "leader's, or from most hosts' when the leader reports none (leader only).",
          registers: [deps.registry],
        }),
    );
    this.#inventoryHosts = declareOnce(
      deps.registry,
      INVENTORY_HOSTS_METRIC,
      () =>
        new Gauge({
          name: INVENTORY_HOSTS_METRIC,
          help: "Hosts running each inventory file, by the file's SHA-256 (leader only).",
          labelNames: ["sha256"],
          registers: [deps.registry],
        }),
    );
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
    const claims = vipClaims(heartbeats);
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
    this.#judgeHosts(heartbeats, now);
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
        const claim = claims.get(vip);
        const hosts = claim?.serving ?? [];
        const silent = silentByVip.get(vip) ?? [];
        return {
          vip,
          services: services.map((s) => s.key).sort(),
          hosts,
          lastSeenOn: hosts.length === 0 ? [...new Set([...silent, ...partial])].sort() : silent,
          ...(claim?.contestedSinceMs !== undefined
            ? { contestedSinceMs: claim.contestedSinceMs }
            : {}),
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

  /** Addresses served that no Service holds, and hosts on another inventory: metrics, Warnings. */
  #judgeHosts(heartbeats: readonly Heartbeat[], now: number): void {
    const fresh = heartbeats.filter((h) => isFresh(h) && !("error" in h.report));
    const held = new Set<string>();
    for (const vip of this.#deps.controlPlaneVips?.() ?? []) {
      const ip = canonicalIp(vip);
      if (ip) held.add(ip);
    }
    for (const service of this.#deps.services.list()) {
      for (const vip of serviceVips(service)) held.add(vip);
    }
    const unheld: string[] = [];
    this.#unheld.reset();
    for (const h of fresh) {
      const report = h.report as HostReport;
      const served = new Set([
        ...report.vips.map((v) => v.ip),
        ...bgpAnnouncedAddresses(report.bgp ?? []),
      ]);
      const extra = [...served].filter((ip) => !held.has(ip));
      this.#unheld.set({ host: h.host }, extra.length);
      for (const ip of extra) unheld.push(`${h.host} ${ip}`);
    }
    for (const key of this.#unheldFindings.step(unheld, now)) {
      const [host, ip] = key.split(" ") as [string, string];
      this.#hostWarning(
        host,
        ADDRESS_WITHOUT_SERVICE,
        `Host ${host} serves ${ip}, which no Service holds and which is no control-plane VIP`,
      );
    }

    const agreement = inventoryAgreement(
      heartbeats.map((h) => ({ host: h.host, fresh: isFresh(h), report: h.report })),
      this.#deps.host,
    );
    this.#disagreement.set(agreement.others.length);
    this.#inventoryHosts.reset();
    for (const [sha256, hosts] of agreement.hostsByDigest) {
      this.#inventoryHosts.set({ sha256 }, hosts.length);
    }
    const ref = agreement.reference;
    const others = new Map(agreement.others.map((o) => [`${o.host} ${o.sha256}`, o]));
    for (const key of this.#inventoryFindings.step(others.keys(), now)) {
      const other = others.get(key)!;
      const than = ref === undefined
        ? "the other hosts (no inventory has most hosts)"
        : ref.from === "leader"
        ? `the leader ${ref.host} (sha256 ${shortDigest(ref.sha256)})`
        : `most hosts (sha256 ${shortDigest(ref.sha256)})`;
      this.#hostWarning(
        other.host,
        INVENTORY_MISMATCH,
        `Host ${other.host} runs another inventory (sha256 ${
          shortDigest(other.sha256)
        }) than ${than}: copy the same file to every host (compare with sha256sum)`,
      );
    }
  }

  /** A Warning on a host's heartbeat Lease (the object that stands for the host here). */
  #hostWarning(host: string, reason: string, message: string): void {
    const lease = this.#deps.leases.list().find((l) =>
      l.metadata?.name === heartbeatLeaseName(host)
    );
    const { name, namespace, uid, resourceVersion } = lease?.metadata ?? {};
    this.#deps.events.event(
      {
        kind: "Lease",
        apiVersion: "coordination.k8s.io/v1",
        metadata: {
          name: name ?? heartbeatLeaseName(host),
          namespace: namespace ?? HEARTBEAT_NAMESPACE,
          ...(uid ? { uid } : {}),
          ...(resourceVersion ? { resourceVersion } : {}),
        },
      },
      "Warning",
      reason,
      message,
    );
    this.#log.warn("{message}", { host, reason, message });
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
        const deadline = [
          this.#decider.nextDeadline(),
          this.#unheldFindings.nextDeadline(),
          this.#inventoryFindings.nextDeadline(),
        ].filter((d) => d !== undefined).sort((a, b) => a - b)[0];
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
      this.#unheld.reset();
      this.#disagreement.reset();
      this.#inventoryHosts.reset();
    }
  }
}
