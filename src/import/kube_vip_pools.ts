/**
 * kube-vip-cloud-provider's pools as it looks them up (cidr-NS, cidr-global, range-NS,
 * range-global: the first present), and the addresses each hands out: its value read as CIDRs
 * when it holds a "/" and as ranges otherwise, split on commas as kube-vip splits it, without
 * IPv4 addresses ending in .0 or .255 and, with `skip-end-ips-in-cidr`, each CIDR's ends. Two
 * pools sharing an address are refused, naming them. Pure.
 *
 * @module
 */
import { type AddressInterval, mergeIntervals } from "../config/pool_size.ts";
import { errorMessage } from "../log/error_message.ts";
import { formatSpan, parseIp, parseRange } from "../net/ip.ts";
import { dotZeroAndBroadcast, intersectIntervals, subtractIntervals } from "./pool_addresses.ts";
import { ImportError, type SourceObject } from "./source_objects.ts";

/** The special "CIDR" that makes kube-vip hand out 0.0.0.0 (its DHCP mode). */
const DHCP = "0.0.0.0/32";

/** One pool kube-vip looks up: whose it is and the key it reads. */
export interface PoolKey {
  /** "global" or the namespace. */
  namespace: string;
  /** The key whose value kube-vip uses for the namespace. */
  key: string;
}

/**
 * kube-vip-cloud-provider's discoverPool for every namespace a key names: cidr-NS, cidr-global,
 * range-NS, range-global, the first present. A namespace whose first key is a global one takes
 * the global pool; its own keys after it are never read.
 */
export function lookupPools(
  data: Readonly<Record<string, string>>,
): { pools: PoolKey[]; shadowed: { key: string; by: string }[] } {
  const has = (key: string) => data[key] !== undefined;
  const namespaces = new Set<string>();
  for (const key of Object.keys(data)) {
    const match = /^(cidr|range)-(.+)$/.exec(key);
    if (match && match[2] !== "global") namespaces.add(match[2]!);
  }
  const pools: PoolKey[] = [];
  const shadowed: { key: string; by: string }[] = [];
  const globalKey = ["cidr-global", "range-global"].find(has);
  if (globalKey !== undefined) {
    pools.push({ namespace: "global", key: globalKey });
    if (globalKey === "cidr-global" && has("range-global")) {
      shadowed.push({ key: "range-global", by: "cidr-global" });
    }
  }
  for (const namespace of [...namespaces].sort()) {
    const order = [`cidr-${namespace}`, "cidr-global", `range-${namespace}`, "range-global"];
    const first = order.find(has)!;
    if (!first.endsWith("-global")) pools.push({ namespace, key: first });
    for (const key of order.slice(order.indexOf(first) + 1)) {
      if (has(key) && !key.endsWith("-global")) shadowed.push({ key, by: first });
    }
  }
  return { pools, shadowed };
}

/** The addresses of one pool, as kube-vip reads its key. */
export interface PoolPlan {
  pool: PoolKey;
  /** The value's entries were read as CIDRs (the value holds a "/"). */
  isCidr: boolean;
  /** kube-vip's DHCP mode: the value is exactly 0.0.0.0/32. */
  dhcp: boolean;
  intervals: AddressInterval[];
  skipped: AddressInterval[];
  /** Range entries netipx drops (first after last, or two families): they add nothing. */
  dropped: string[];
  /** Where the key is, for messages. */
  at: string;
}

/**
 * The addresses kube-vip hands out from one key's value (ipam's addressbuilder).
 * @param object the ConfigMap
 * @param pool the pool and its key
 * @param skipEnds whether skip-end-ips-in-cidr is on
 * @param data the ConfigMap's data
 * @returns the plan
 * @throws {ImportError} naming the key when kube-vip could not parse the value either
 */
export function planPool(
  object: SourceObject,
  pool: PoolKey,
  skipEnds: boolean,
  data: Readonly<Record<string, string>>,
): PoolPlan {
  const text = data[pool.key]!;
  const at = object.at(["data", pool.key]);
  const plan: PoolPlan = {
    pool,
    isCidr: text.includes("/"),
    dhcp: text === DHCP,
    intervals: [],
    skipped: [],
    dropped: [],
    at,
  };
  if (plan.dhcp) return plan;
  // split on commas exactly as kube-vip does: no trimming, an empty entry is an error
  for (const entry of text.split(",")) {
    const refuse = (what: string) =>
      new ImportError(
        `${at}: ConfigMap "${object.name}" ${pool.key}: "${entry}" is not ${what}; kube-vip ` +
          "could not parse this value either, so it handed out no address from it. Fix or " +
          "remove the key",
      );
    if (plan.isCidr) {
      const interval = cidrInterval(entry);
      if (interval === undefined) {
        throw refuse('a CIDR (the value holds a "/", so kube-vip reads every entry as one)');
      }
      plan.intervals.push(interval);
      continue;
    }
    const parts = entry.split("-");
    const first = parseIp(parts[0] ?? ""), last = parseIp(parts[1] ?? "");
    if (parts.length !== 2 || !first || !last) throw refuse("a range (first-last)");
    if (first.family !== last.family || first.value > last.value) plan.dropped.push(entry);
    else plan.intervals.push({ family: first.family, first: first.value, last: last.value });
  }
  try {
    plan.skipped = [
      ...dotZeroAndBroadcast(plan.intervals),
      ...(plan.isCidr && skipEnds ? prefixEnds(plan.intervals) : []),
    ];
  } catch (error) {
    throw new ImportError(
      `${at}: ConfigMap "${object.name}" ${pool.key}: ${errorMessage(error)}; split it`,
    );
  }
  return plan;
}

/**
 * kube-vip counts the addresses in use per namespace (all namespaces for the global pool), so
 * two pools sharing an address may each have handed it out; Keelson's pools are disjoint.
 */
export function refuseOverlaps(object: SourceObject, plans: readonly PoolPlan[]): void {
  const usable = plans.map((p) => subtractIntervals(mergeIntervals(p.intervals), p.skipped));
  for (let i = 0; i < plans.length; i++) {
    for (let j = i + 1; j < plans.length; j++) {
      const shared = intersectIntervals(usable[i]!, usable[j]!);
      if (shared.length === 0) continue;
      const [a, b] = [plans[i]!, plans[j]!];
      const span = shared.map(formatSpan).slice(0, 3).join(", ") +
        (shared.length > 3 ? ", …" : "");
      throw new ImportError(
        `${b.at}: ConfigMap "${object.name}" ${a.pool.key} and ${b.pool.key} share ${span}: ` +
          "kube-vip counts the addresses in use per namespace, so it may have given one of " +
          "them to a Service of each; Keelson hands an address out once. Find the Services " +
          "holding them (kubectl get svc -A -o wide), then give each namespace addresses of " +
          "its own in the ConfigMap (or move the shared ones to one key) and import again",
      );
    }
  }
}

/**
 * Go's netip.ParsePrefix, masked as netipx.IPSetBuilder.AddPrefix does: no space around it, and
 * an IPv4-mapped IPv6 prefix is not an IPv4 one.
 */
function cidrInterval(text: string): AddressInterval | undefined {
  if (!text.includes("/") || text !== text.trim()) return undefined;
  const range = parseRange(text, { hostBits: "mask" });
  if ("error" in range || (range.family === 4 && text.includes(":"))) return undefined;
  return { family: range.family, first: range.first, last: range.last };
}

/**
 * kube-vip's `skip-end-ips-in-cidr`: the CIDRs are merged into one address set and split into
 * the fewest prefixes (netipx IPSet.Prefixes), and each IPv4 prefix shorter than /31 loses its
 * first and last address.
 */
export function prefixEnds(intervals: readonly AddressInterval[]): AddressInterval[] {
  const out: AddressInterval[] = [];
  for (const { family, first, last } of mergeIntervals(intervals)) {
    if (family !== 4) continue;
    let start = first;
    while (start <= last) {
      let size = 1n;
      while (start % (size * 2n) === 0n && start + size * 2n - 1n <= last) size *= 2n;
      if (size >= 4n) {
        out.push({ family, first: start, last: start }, {
          family,
          first: start + size - 1n,
          last: start + size - 1n,
        });
      }
      start += size;
    }
  }
  return out;
}
