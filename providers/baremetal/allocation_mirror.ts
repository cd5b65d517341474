/**
 * The allocator as the Services show it: the Kubernetes API is the only state, so before every
 * decision the allocator is brought in line with the Services' statuses, plus the addresses this
 * process handed out whose status write has not been seen yet (so two Services never get one
 * address in the window between the two).
 *
 * Bringing it in line is incremental. Over an informer only the Services that changed since the
 * last sync (and those with pending addresses) are looked at, so an ensure costs O(changes), not
 * O(Services) (a burst of N Services was O(N²)); a Service whose object and pending addresses are
 * the same as last time is not restored again. Every Service is looked at on the first sync, on a
 * new Service cache, after the pools changed, and always over a plain lister (it has no changes
 * to follow). `phase` says which of these the next sync does.
 *
 * @module
 */
import type { V1Service } from "@kubernetes/client-node";
import type { Config } from "../../src/config/types.ts";
import { type Informer, type Lister, objectKey } from "../../src/kube/ports.ts";
import { logger } from "../../src/log/logging.ts";
import { canonicalIp } from "../../src/net/ip.ts";
import { matchesClass } from "../../src/cloud/load_balancer_class.ts";
import { Allocator, type OrphanedAllocation } from "./ipam/allocator.ts";
import { buildPools } from "./ipam/pools.ts";
import { sameAddresses } from "./ipam/same_addresses.ts";
import { readServiceRequest } from "./ipam/service_requests.ts";
import { ingressIps, statusHolding } from "./ipam/status_holdings.ts";

/**
 * What the next `sync` does:
 * - `empty`: never synced; it builds the pools and looks at every Service;
 * - `full-pass-due`: the Service cache is new or the pools changed; it looks at every Service;
 * - `following`: it looks only at the Services the informer changed, and the pending ones;
 * - `listing`: the cache is a plain lister (no changes to follow); it looks at every Service.
 */
export type MirrorPhase = "empty" | "full-pass-due" | "following" | "listing";

/** The allocator mirrored from the Services' statuses and the addresses not yet written. */
export class AllocationMirror {
  /** The allocator as of the last sync (read-only use: stats, inUse, orphans). */
  readonly allocator: Allocator = new Allocator();
  #phase: MirrorPhase = "empty";
  /** The configuration the pools were built from. */
  #config: Config | undefined;
  /** The cache followed, its unsubscribe, and the keys it changed since the last sync. */
  #followed: Lister<V1Service> | undefined;
  #unfollow: (() => void) | undefined;
  #changed = new Set<string>();
  /** Addresses handed out whose status write has not been seen in the cache yet. */
  #pending = new Map<string, string[]>();
  /** Which object each Service's allocation was last restored from (and with which pending). */
  #restored = new Map<string, { object: V1Service; extra: string }>();
  /** Orphaned addresses already logged (since the pools last changed). */
  #reported = new Set<string>();
  #log = logger("provider", "load-balancer");

  /** @returns what the next `sync` does */
  get phase(): MirrorPhase {
    return this.#phase;
  }

  /**
   * Brings the allocator in line with `config`'s pools and the Services in `services`. Throws
   * whatever the cache or the allocator throws: nothing here is expected to fail.
   * @param config the configuration in force
   * @param services the Service cache, synced
   */
  sync(config: Config, services: Lister<V1Service>): void {
    this.#follow(services);
    const repooled = config !== this.#config;
    if (repooled) {
      this.#config = config;
      this.allocator.setPools(buildPools(config.pools));
      this.#restored.clear();
      this.#reported.clear();
      this.#phase = "full-pass-due";
    }
    const touched: string[] = [];
    if (this.#phase === "following") {
      for (const key of new Set([...this.#changed, ...this.#pending.keys()])) {
        this.#refreshOne(config, key, services.get(key), touched);
      }
    } else {
      const live = new Map(services.list().map((s) => [objectKey(s), s]));
      // every Service the allocator holds too: one deleted since the last sync is released
      // even when the pools changed meanwhile (which forgets what was restored)
      const keys = new Set([
        ...this.#pending.keys(),
        ...this.#restored.keys(),
        ...this.allocator.serviceKeys(),
        ...live.keys(),
      ]);
      for (const key of keys) this.#refreshOne(config, key, live.get(key), touched);
    }
    this.#changed.clear();
    this.#phase = this.#unfollow ? "following" : "listing";
    // every orphan after the pools changed; otherwise those of the Services restored just now
    this.#reportOrphans(
      repooled
        ? this.allocator.orphanedAllocations()
        : touched.flatMap((key) => this.allocator.orphanedAllocations(key)),
    );
  }

  /**
   * Records the addresses `ensure` returned for a Service: pending until its status shows them.
   * @param key the Service's key
   * @param ips the addresses assigned
   * @param shown the addresses its status shows now
   */
  assigned(key: string, ips: readonly string[], shown: readonly string[]): void {
    if (sameAddresses([...shown], [...ips])) this.#pending.delete(key);
    else this.#pending.set(key, [...ips]);
  }

  /**
   * Releases a deleted Service's addresses; its status, which may still show them until the
   * controller clears it, is read again at the next sync.
   * @param key the Service's key
   */
  forget(key: string): void {
    this.#pending.delete(key);
    this.allocator.release(key);
    this.#restored.delete(key);
    this.#changed.add(key);
  }

  #follow(services: Lister<V1Service>): void {
    if (services === this.#followed) return;
    this.#unfollow?.();
    this.#followed = services;
    this.#changed.clear();
    const informer = services as Partial<Informer<V1Service>>;
    this.#unfollow = typeof informer.subscribe === "function"
      ? informer.subscribe((event) => this.#changed.add(objectKey(event.object)))
      : undefined;
    if (this.#phase !== "empty") this.#phase = "full-pass-due";
  }

  /** Brings one Service's allocation in line with the cache (and its pending addresses). */
  #refreshOne(config: Config, key: string, service: V1Service | undefined, touched: string[]) {
    const ips = this.#pending.get(key);
    if (ips) {
      const gone = !service || Boolean(service.metadata?.deletionTimestamp) ||
        !matchesClass(config, service);
      const shown = service ? ingressIps(service).map((ip) => canonicalIp(ip) ?? ip) : [];
      if (gone || sameAddresses(shown, ips)) this.#pending.delete(key);
    }
    if (!service) {
      // every allocation was restored (tracked) or assigned (pending, pruned above)
      this.allocator.release(key);
      this.#restored.delete(key);
      return;
    }
    const extra = this.#pending.get(key) ?? [];
    const memo = this.#restored.get(key);
    if (memo && memo.object === service && memo.extra === extra.join(",")) return;
    touched.push(key);
    this.#restored.set(key, { object: service, extra: extra.join(",") });
    const holding = statusHolding(config, service);
    if (holding) {
      // until the status shows the new addresses, the Service holds both old and new
      this.allocator.restore(key, [...holding.ips, ...extra], holding.options);
    } else if (extra.length > 0) {
      const request = readServiceRequest(service);
      this.allocator.restore(key, extra, {
        sharing: request.ok ? request.request.sharing : undefined,
      });
    } else {
      this.allocator.release(key);
    }
  }

  /** Logs each orphaned address once (per change of the pools). */
  #reportOrphans(orphans: readonly OrphanedAllocation[]): void {
    for (const o of orphans) {
      const id = `${o.serviceKey} ${o.ip}`;
      if (this.#reported.has(id)) continue;
      this.#reported.add(id);
      this.#log.warn("Service {key} keeps {ip}, which no pool offers any more ({why})", {
        key: o.serviceKey,
        ip: o.ip,
        why: o.why,
        pool: o.pool,
      });
    }
  }
}
