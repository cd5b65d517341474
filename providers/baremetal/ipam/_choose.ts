/**
 * The choice of addresses for one request, given the pools and a way to ask whether an address
 * is taken. Folder-internal: `Allocator.assign` is the entry point.
 *
 * @module
 */
import { formatIp, type IpFamily } from "../../../src/net/ip.ts";
import { type AddressPool, addressStanding, poolHasFamily } from "./pools.ts";
import { poolRefusal, poolsToTry } from "./pool_order.ts";
import type { ServiceRequest } from "./service_requests.ts";

/** Machine-readable reasons an assignment fails (used as Event reasons' detail and in errors). */
export type AllocationFailure =
  | "AddressInUse"
  | "AddressNotInPool"
  | "AddressReserved"
  | "PoolNotAllowed"
  | "PoolExhausted"
  | "UnknownPool"
  | "InvalidRequest"
  | "FamilyUnavailable";

/** One address held by a Service. */
export interface Holding {
  family: IpFamily;
  value: bigint;
  text: string;
}

/** What `chooseAddresses` needs. */
export interface ChooseOptions {
  /** Every pool (any order: `poolsToTry` orders them). */
  pools: readonly AddressPool[];
  request: ServiceRequest;
  /** Why the address may not be taken by this Service, or undefined when it is free/shareable. */
  conflict(family: IpFamily, value: bigint): string | undefined;
  /** The lowest usable address of the pool and family that is free or shareable for it. */
  lowest(pool: AddressPool, family: IpFamily): bigint | undefined;
  /** Held usable addresses of a pool and family, for messages. */
  used(pool: AddressPool, family: IpFamily): number;
}

/** The outcome of `chooseAddresses`. */
export type Choice =
  | { ok: true; ips: Holding[]; pool: string }
  | { ok: false; reason: AllocationFailure; message: string };

/**
 * Chooses addresses: exactly the requested ones or a reason, else the lowest acceptable ones.
 * @param options pools, request and the conflict oracle
 * @returns the addresses and their pool, or a reason with a message quoting the values
 */
export function chooseAddresses(options: ChooseOptions): Choice {
  const { pools, request } = options;
  const fail = (reason: AllocationFailure, detail: string): Choice => ({
    ok: false,
    reason,
    message: `Cannot allocate an address for service "${request.serviceKey}": ${detail}`,
  });
  const names = pools.map((p) => `"${p.name}"`).join(", ") || "none";
  const named = request.pool === undefined ? undefined : pools.find((p) => p.name === request.pool);
  if (request.pool !== undefined && !named) {
    return fail("UnknownPool", `pool "${request.pool}" does not exist (pools: ${names})`);
  }

  if (request.ips.length > 0) {
    const chosen: Holding[] = [];
    let poolName = "";
    for (const ip of request.ips) {
      let holders = pools.filter((p) => addressStanding(p, ip.family, ip.value) !== "outside");
      if (named) {
        if (!holders.includes(named)) {
          return fail(
            "AddressNotInPool",
            `address "${ip.text}" is not in pool "${named.name}" (${rangesOf(named)})`,
          );
        }
        holders = [named];
      }
      if (holders.length === 0) {
        return fail(
          "AddressNotInPool",
          `address "${ip.text}" is not in any pool (pools: ${names})`,
        );
      }
      const pool = holders.find((p) => addressStanding(p, ip.family, ip.value) === "usable") ??
        holders[0]!;
      const standing = addressStanding(pool, ip.family, ip.value);
      if (standing !== "usable") {
        const what = standing === "reserved" ? "reserved" : `the ${standing} address of a CIDR`;
        return fail("AddressReserved", `address "${ip.text}" is ${what} in pool "${pool.name}"`);
      }
      const refusal = poolRefusal(pool, request);
      if (refusal) {
        return fail("PoolNotAllowed", `address "${ip.text}" is in ${refusal}`);
      }
      const why = options.conflict(ip.family, ip.value);
      if (why) return fail("AddressInUse", `address "${ip.text}" is in use: ${why}`);
      chosen.push({ family: ip.family, value: ip.value, text: ip.text });
      poolName ||= pool.name;
    }
    return { ok: true, ips: sortByFamily(chosen, request.families), pool: poolName };
  }

  let candidates: AddressPool[];
  if (named) {
    const refusal = poolRefusal(named, request);
    if (refusal) return fail("PoolNotAllowed", refusal);
    candidates = [named];
  } else {
    const auto = pools.filter((p) => p.autoAssign);
    if (auto.length === 0) {
      return fail(
        "PoolExhausted",
        `no pool has auto_assign enabled (pools: ${names}); name a pool with annotation ` +
          `"keelson.io/address-pool" or request an address`,
      );
    }
    candidates = poolsToTry(auto, request);
    if (candidates.length === 0) {
      return fail(
        "PoolNotAllowed",
        `no auto-assign pool serves this Service (${
          auto.map((p) => poolRefusal(p, request)).join("; ")
        })`,
      );
    }
  }

  let anyFamily = false;
  const exhausted = new Set<string>();
  // PreferDualStack first looks for a pool with both families free, then settles for one
  const passes = request.policy === "PreferDualStack" ? ["all", "some"] : ["all"];
  for (const pass of passes) {
    for (const pool of candidates) {
      const families = wantedFamilies(pool, request);
      if (families.length === 0) continue;
      anyFamily = true;
      // PreferDualStack's first pass wants both requested families from one pool
      if (pass === "all" && request.policy === "PreferDualStack" && families.length < 2) {
        continue;
      }
      const picks: Holding[] = [];
      for (const family of families) {
        const value = options.lowest(pool, family);
        if (value === undefined) {
          exhausted.add(
            `pool "${pool.name}" has no free IPv${family} addresses ` +
              `(${options.used(pool, family)} of ${pool.capacity[family]} used)`,
          );
        } else {
          picks.push({ family, value, text: formatIp(family, value) });
        }
      }
      if (picks.length === families.length || (pass === "some" && picks.length > 0)) {
        return { ok: true, ips: picks, pool: pool.name };
      }
    }
  }
  if (!anyFamily) {
    const wanted = request.policy === "RequireDualStack"
      ? "IPv4 and IPv6"
      : request.families.map((f) => `IPv${f}`).join(" or ");
    return fail(
      "FamilyUnavailable",
      `no usable pool offers ${wanted} (spec.ipFamilyPolicy ${request.policy}; pools tried: ` +
        `${candidates.map((p) => `"${p.name}"`).join(", ")})`,
    );
  }
  return fail("PoolExhausted", [...exhausted].join("; "));
}

/** The families to take from `pool` under the request's policy, in preference order. */
function wantedFamilies(pool: AddressPool, request: ServiceRequest): IpFamily[] {
  const offered = request.families.filter((f) => poolHasFamily(pool, f));
  switch (request.policy) {
    case "SingleStack":
      return offered.slice(0, 1);
    case "PreferDualStack":
      return offered.slice(0, 2);
    case "RequireDualStack":
      return offered.includes(4) && offered.includes(6) ? offered.slice(0, 2) : [];
  }
}

function rangesOf(pool: AddressPool): string {
  return pool.ranges.map((r) => `"${r.source}"`).join(", ");
}

function sortByFamily(ips: Holding[], families: readonly IpFamily[]): Holding[] {
  return [...ips].sort((a, b) => families.indexOf(a.family) - families.indexOf(b.family));
}
