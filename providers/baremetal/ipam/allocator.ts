/**
 * The in-memory address allocator (MetalLB-style): which Service holds which address, and the
 * choice of addresses for a Service's request. Pure and synchronous: Services and pools come in as
 * data, nothing is read or written elsewhere. The Kubernetes API stays the only durable state;
 * callers rebuild this object from Service statuses with `restore` before assigning.
 *
 * Rules: a requested address is either given exactly or refused with a reason, never swapped
 * for another; auto-assignment takes the lowest free address of the first pool in `poolsToTry`'s
 * order (pool_order.ts: priority, selectors, file order); a Service
 * that already holds compatible addresses keeps them; addresses outside every pool (pool removed
 * or shrunk) stay with their Service and are reported as orphaned.
 *
 * Cost: the lowest free address comes from a per-pool cursor (_free_search.ts), amortised
 * O(log n) per allocation; shareable addresses are looked up among the Service's own and those
 * of Services with the same sharing key; per-pool usage is counted as addresses come and go.
 *
 * @module
 */
import { formatIp, type IpFamily, parseIp } from "../../../src/net/ip.ts";
import {
  type AddressPool,
  addressStanding,
  type ExcludedWhy,
  isUsable,
  poolHasFamily,
} from "./pools.ts";
import type { ServiceRequest, SharingProfile } from "./service_requests.ts";
import { sharingConflict } from "./sharing.ts";
import { type AllocationFailure, chooseAddresses, type Holding } from "./_choose.ts";

export type { AllocationFailure, Holding } from "./_choose.ts";
import { FreeSearch } from "./_free_search.ts";
import { sameAddresses } from "./same_addresses.ts";
import { compareCodeUnits } from "../../../src/text/code_unit_order.ts";

/** The outcome of `assign`. */
export type AssignResult =
  | { ok: true; ips: string[]; pool: string }
  | { ok: false; reason: AllocationFailure; message: string };

/** An address held by a Service but no longer usable in any pool. */
export interface OrphanedAllocation {
  serviceKey: string;
  /** Canonical text of the address. */
  ip: string;
  /** The pool the addresses were attributed to (or named by the annotation), even if removed. */
  pool: string | undefined;
  /** `outside` (no pool's ranges hold it) or why its pool excludes it. */
  why: "outside" | ExcludedWhy;
}

/** Usage of one pool and family. `total` is exact; IPv6 pools can exceed 2^53. */
export interface PoolStats {
  pool: string;
  family: IpFamily;
  total: bigint;
  used: number;
}

/** Options of `restore`. */
export interface RestoreOptions {
  /** The pool named by the Service's `keelson.io/allocated-from-pool` annotation. */
  pool?: string | undefined;
  /** The holder's sharing profile; absent = it shares with nobody. */
  sharing?: SharingProfile | undefined;
  /** False for Services another implementation owns: they block addresses but are not reported. @default true */
  managed?: boolean;
  /**
   * The holder's creation time (ms). When two Services' statuses show one address they may not
   * share, the older keeps it and the younger is moved. @default youngest
   */
  created?: number | undefined;
}

interface Allocation {
  ips: Holding[];
  pool: string | undefined;
  sharing: SharingProfile | undefined;
  managed: boolean;
  created?: number | undefined;
  /** Known only from the API (restore), not yet confirmed by an assign. */
  restored?: boolean;
}

/** The allocator. One per process; rebuilt from the API on start and before decisions. */
export class Allocator {
  /** Pools sorted by name. */
  #pools: AddressPool[] = [];
  /** serviceKey -> what it holds. */
  #byService = new Map<string, Allocation>();
  /** Per family: address -> service keys holding it (more than one only when shared). */
  #owners: Record<IpFamily, Map<bigint, Set<string>>> = { 4: new Map(), 6: new Map() };
  /** Per pool and family: the lowest-free-address search. */
  #searches = new Map<AddressPool, Record<IpFamily, FreeSearch>>();
  /** Per pool and family: distinct usable addresses held. */
  #used = new Map<AddressPool, Record<IpFamily, number>>();
  /** sharing key -> service keys holding addresses with it. */
  #sharers = new Map<string, Set<string>>();

  /**
   * Replaces the pools. Existing allocations are kept, even outside every pool.
   * @param pools built pools (`buildPools`)
   * @returns the allocations now outside every pool's usable addresses
   */
  setPools(pools: readonly AddressPool[]): OrphanedAllocation[] {
    this.#pools = [...pools].sort((a, b) => compareCodeUnits(a.name, b.name));
    this.#searches = new Map(this.#pools.map((p) => [p, {
      4: new FreeSearch(p.usable[4]),
      6: new FreeSearch(p.usable[6]),
    }]));
    this.#used = new Map(this.#pools.map((p) => [p, { 4: 0, 6: 0 }]));
    for (const family of [4, 6] as const) {
      for (const value of this.#owners[family].keys()) this.#countHeld(family, value, 1);
    }
    for (const allocation of this.#byService.values()) {
      allocation.pool = this.#attribute(allocation.ips, allocation.pool);
    }
    return this.orphanedAllocations();
  }

  /** The pools, sorted by name. */
  pools(): readonly AddressPool[] {
    return this.#pools;
  }

  /**
   * Gives a Service addresses for its request, or says why not. Idempotent: a Service already
   * holding addresses that satisfy the request keeps them. On failure the Service keeps what it
   * held (its status still shows it).
   * @param serviceKey `namespace/name`
   * @param request the parsed request (`readServiceRequest`)
   * @returns the addresses (canonical text) and pool, or a reason and a message quoting the values
   */
  assign(serviceKey: string, request: ServiceRequest): AssignResult {
    const current = this.#byService.get(serviceKey);
    if (current && this.#satisfies(serviceKey, current, request)) {
      this.#unshare(serviceKey, current);
      current.sharing = request.sharing;
      this.#share(serviceKey, current);
      current.managed = true;
      current.restored = false;
      return { ok: true, ips: current.ips.map((h) => h.text), pool: current.pool ?? "" };
    }
    const choice = chooseAddresses({
      pools: this.#pools,
      request,
      conflict: (family, value) => this.#conflict(serviceKey, family, value, request.sharing),
      lowest: (pool, family) => this.#lowestAcceptable(serviceKey, request.sharing, pool, family),
      used: (pool, family) => this.#used.get(pool)?.[family] ?? 0,
    });
    if (!choice.ok) return choice;
    this.release(serviceKey);
    this.#record(serviceKey, {
      ips: choice.ips,
      pool: choice.pool,
      sharing: request.sharing,
      managed: true,
      created: current?.created,
    });
    return { ok: true, ips: choice.ips.map((h) => h.text), pool: choice.pool };
  }

  /**
   * Registers addresses a Service already holds according to the API (its status), whether or
   * not they are in a pool, so they are never given to another Service.
   * @param serviceKey `namespace/name`
   * @param ips addresses from `status.loadBalancer.ingress`; non-addresses are ignored
   * @param options pool hint, sharing profile, managed flag
   * @returns the canonical addresses registered
   */
  restore(serviceKey: string, ips: readonly string[], options: RestoreOptions = {}): string[] {
    const holdings: Holding[] = [];
    for (const text of ips) {
      const ip = parseIp(text.trim());
      if (!ip) continue;
      const canonical = formatIp(ip.family, ip.value);
      if (!holdings.some((h) => h.text === canonical)) holdings.push({ ...ip, text: canonical });
    }
    this.release(serviceKey);
    if (holdings.length === 0) return [];
    this.#record(serviceKey, {
      ips: holdings,
      pool: this.#attribute(holdings, options.pool),
      sharing: options.sharing,
      managed: options.managed ?? true,
      created: options.created,
      restored: true,
    });
    return holdings.map((h) => h.text);
  }

  /**
   * Forgets what a Service holds.
   * @param serviceKey `namespace/name`
   * @returns whether it held anything
   */
  release(serviceKey: string): boolean {
    const allocation = this.#byService.get(serviceKey);
    if (!allocation) return false;
    for (const h of allocation.ips) {
      const owners = this.#owners[h.family].get(h.value);
      owners?.delete(serviceKey);
      if (owners?.size === 0) {
        this.#owners[h.family].delete(h.value);
        this.#countHeld(h.family, h.value, -1);
      }
    }
    this.#unshare(serviceKey, allocation);
    this.#byService.delete(serviceKey);
    return true;
  }

  /**
   * Whether any Service holds the address.
   * @param ip an address in any textual form
   * @returns false for text that is not an address
   */
  inUse(ip: string): boolean {
    const parsed = parseIp(ip.trim());
    return parsed !== undefined && this.#owners[parsed.family].has(parsed.value);
  }

  /**
   * What a Service holds.
   * @param serviceKey `namespace/name`
   * @returns canonical addresses and pool, or undefined
   */
  holding(serviceKey: string): { ips: string[]; pool: string | undefined } | undefined {
    const a = this.#byService.get(serviceKey);
    return a && { ips: a.ips.map((h) => h.text), pool: a.pool };
  }

  /** Every Service key holding addresses, sorted. */
  serviceKeys(): string[] {
    return [...this.#byService.keys()].sort();
  }

  /**
   * Addresses of managed Services that no pool can hand out any more (pool removed, shrunk or
   * address reserved since), sorted by service and address.
   * @param serviceKey only this Service's (cheap when there are many Services)
   * @returns one entry per orphaned address
   */
  orphanedAllocations(serviceKey?: string): OrphanedAllocation[] {
    const out: OrphanedAllocation[] = [];
    const keys = serviceKey === undefined ? this.serviceKeys() : [serviceKey];
    for (const serviceKey of keys) {
      const a = this.#byService.get(serviceKey);
      if (!a?.managed) continue;
      for (const h of a.ips) {
        const standings = this.#pools.map((p) => addressStanding(p, h.family, h.value));
        if (standings.includes("usable")) continue;
        const why = standings.find((s) => s !== "outside") ?? "outside";
        out.push({ serviceKey, ip: h.text, pool: a.pool, why: why as OrphanedAllocation["why"] });
      }
    }
    return out;
  }

  /**
   * Usage of each pool and family the pool has; shared addresses count once.
   * @returns entries sorted by pool name, then family
   */
  stats(): PoolStats[] {
    const out: PoolStats[] = [];
    for (const pool of this.#pools) {
      for (const family of [4, 6] as const) {
        if (!poolHasFamily(pool, family)) continue;
        out.push({
          pool: pool.name,
          family,
          total: pool.capacity[family],
          used: this.#used.get(pool)?.[family] ?? 0,
        });
      }
    }
    return out;
  }

  #record(serviceKey: string, allocation: Allocation): void {
    this.#byService.set(serviceKey, allocation);
    for (const h of allocation.ips) {
      let owners = this.#owners[h.family].get(h.value);
      if (!owners) {
        owners = new Set<string>();
        this.#owners[h.family].set(h.value, owners);
        this.#countHeld(h.family, h.value, 1);
      }
      owners.add(serviceKey);
    }
    this.#share(serviceKey, allocation);
  }

  #share(serviceKey: string, allocation: Allocation): void {
    const sharingKey = allocation.sharing?.key;
    if (sharingKey === undefined) return;
    const sharers = this.#sharers.get(sharingKey) ?? new Set<string>();
    sharers.add(serviceKey);
    this.#sharers.set(sharingKey, sharers);
  }

  #unshare(serviceKey: string, allocation: Allocation): void {
    const sharingKey = allocation.sharing?.key;
    if (sharingKey === undefined) return;
    const sharers = this.#sharers.get(sharingKey);
    sharers?.delete(serviceKey);
    if (sharers?.size === 0) this.#sharers.delete(sharingKey);
  }

  /** An address became held (+1) or free (-1): pool usage, and the search learns of a release. */
  #countHeld(family: IpFamily, value: bigint, delta: 1 | -1): void {
    for (const pool of this.#pools) {
      if (!isUsable(pool, family, value)) continue;
      const used = this.#used.get(pool)!;
      used[family] += delta;
      if (delta < 0) this.#searches.get(pool)![family].released(value);
    }
  }

  /**
   * The lowest usable address of the pool and family this Service may take: the lowest free one,
   * unless one it holds itself or one held under its sharing key is lower and acceptable.
   */
  #lowestAcceptable(
    serviceKey: string,
    sharing: SharingProfile,
    pool: AddressPool,
    family: IpFamily,
  ): bigint | undefined {
    const owners = this.#owners[family];
    let best = this.#searches.get(pool)?.[family].lowestFree((value) => owners.has(value));
    const consider = (h: Holding): void => {
      if (h.family !== family || (best !== undefined && h.value >= best)) return;
      if (!isUsable(pool, family, h.value)) return;
      if (this.#conflict(serviceKey, family, h.value, sharing) === undefined) best = h.value;
    };
    this.#byService.get(serviceKey)?.ips.forEach(consider);
    if (sharing.key !== undefined) {
      for (const other of this.#sharers.get(sharing.key) ?? []) {
        this.#byService.get(other)?.ips.forEach(consider);
      }
    }
    return best;
  }

  /** Why `serviceKey` may not take the address, or undefined when it is free or shareable. */
  #conflict(
    serviceKey: string,
    family: IpFamily,
    value: bigint,
    sharing: SharingProfile,
    olderThan?: Allocation,
  ): string | undefined {
    const owners = this.#owners[family].get(value);
    if (owners === undefined) return undefined;
    // sorted only when shared, so the message names the same holder every time
    for (const owner of owners.size === 1 ? owners : [...owners].sort()) {
      if (owner === serviceKey) continue;
      const held = this.#byService.get(owner);
      if (
        olderThan?.restored && held?.restored && this.#older(serviceKey, olderThan, owner, held)
      ) {
        continue;
      }
      const why = sharingConflict(owner, this.#byService.get(owner)?.sharing, sharing);
      if (why) return why;
    }
    return undefined;
  }

  /** Whether the held addresses still answer the request (so the Service keeps them). */
  #satisfies(serviceKey: string, current: Allocation, request: ServiceRequest): boolean {
    if (current.ips.length === 0) return false;
    if (request.ips.length > 0) {
      const want = request.ips.map((ip) => ip.text);
      if (!sameAddresses(current.ips.map((h) => h.text), want)) return false;
    }
    if (request.pool !== undefined && current.pool !== request.pool) return false;
    if (!current.ips.every((h) => request.families.includes(h.family))) return false;
    if (request.policy === "SingleStack" && current.ips.length !== 1) return false;
    if (request.policy === "RequireDualStack" && current.ips.length !== 2) return false;
    // two statuses showing one address they may not share (a restore from backup, a hand edit):
    // the older Service keeps it, the younger is moved when its turn comes
    return current.ips.every((h) =>
      this.#conflict(serviceKey, h.family, h.value, request.sharing, current) === undefined
    );
  }

  /** Whether `a` (held by `aKey`) counts as older than `b`: creation time, then key. */
  #older(aKey: string, a: Allocation, bKey: string, b: Allocation | undefined): boolean {
    const ta = a.created ?? Number.MAX_SAFE_INTEGER;
    const tb = b?.created ?? Number.MAX_SAFE_INTEGER;
    return ta !== tb ? ta < tb : aKey < bKey;
  }

  /** The pool to attribute addresses to: the hint if it holds them, else the first that does. */
  #attribute(ips: readonly Holding[], hint: string | undefined): string | undefined {
    const holds = (p: AddressPool) =>
      ips.every((h) => addressStanding(p, h.family, h.value) !== "outside");
    const hinted = this.#pools.find((p) => p.name === hint);
    if (hinted && holds(hinted)) return hinted.name;
    // a removed pool keeps its name on the allocation, so orphans say where they came from
    return this.#pools.find(holds)?.name ?? hint;
  }
}
