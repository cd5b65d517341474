/**
 * Offline allocation: what every LoadBalancer Service of a cluster snapshot would get from the
 * inventory's pools, or why it stays pending. `keelson plan` and `keelson render` use it; it runs
 * the same allocator, restore and request reading as the live load balancer. Pure.
 *
 * @module
 */
import type { V1Service } from "@kubernetes/client-node";
import type { Config } from "../../../src/config/types.ts";
import { objectKey } from "../../../src/kube/ports.ts";
import { canonicalIp, compareRangeStarts, parseIp } from "../../../src/net/ip.ts";
import { handlesService } from "../../../src/cloud/load_balancer_class.ts";
import type {
  AllocationPlan,
  OtherClassService,
  PlannedAllocation,
} from "../../../src/cloud/cluster_plan.ts";
import { Allocator } from "./allocator.ts";
import { type AddressPool, buildPools } from "./pools.ts";
import { readServiceRequest } from "./service_requests.ts";
import { ingressIps, restoreHoldings, statusHoldings } from "./status_holdings.ts";
import { sameAddresses } from "./same_addresses.ts";
import { compareCodeUnits } from "../../../src/text/code_unit_order.ts";

/**
 * Plans allocations for a snapshot: existing statuses are restored first (they are never taken
 * away), then Services are served oldest first (creation time, then key) so the plan is stable.
 * @param config the validated configuration
 * @param services every Service of the snapshot
 * @returns the plan
 */
export function planAllocations(config: Config, services: readonly V1Service[]): AllocationPlan {
  const allocator = new Allocator();
  const pools = buildPools(config.pools);
  const poolOf = poolIndex(pools);
  allocator.setPools(pools);
  restoreHoldings(allocator, statusHoldings(config, services));

  const planned: PlannedAllocation[] = [];
  const ours = services.filter((s) => handlesService(config, s) && !s.metadata?.deletionTimestamp)
    .sort(byAge);
  for (const service of ours) {
    const serviceKey = objectKey(service);
    const request = readServiceRequest(service);
    const result = request.ok
      ? allocator.assign(serviceKey, request.request)
      : { ok: false as const, reason: request.reason, message: request.message };
    if (result.ok) {
      const current = ingressIps(service).map((ip) => canonicalIp(ip.trim()) ?? ip);
      const kept = sameAddresses(current, result.ips);
      planned.push({
        serviceKey,
        outcome: kept ? "kept" : "allocated",
        ips: result.ips,
        pool: result.pool || undefined,
        pools: result.ips.map((ip) => poolOf(ip) ?? (result.pool || undefined)),
      });
    } else {
      planned.push({
        serviceKey,
        outcome: "pending",
        ips: [],
        pool: undefined,
        pools: [],
        reason: result.reason,
        message: result.message,
      });
    }
  }
  planned.sort((a, b) => (a.serviceKey < b.serviceKey ? -1 : 1));
  const otherClass = services
    .filter((s) => s.spec?.type === "LoadBalancer" && !handlesService(config, s))
    .map((s): OtherClassService => {
      const cls = s.spec?.loadBalancerClass;
      return { serviceKey: objectKey(s), ...(cls ? { loadBalancerClass: cls } : {}) };
    })
    .sort((a, b) => compareCodeUnits(a.serviceKey, b.serviceKey));
  return {
    services: planned,
    otherClass,
    orphans: allocator.orphanedAllocations(),
    stats: allocator.stats(),
    problems: pools.flatMap((p) => p.problems),
  };
}

/**
 * A lookup from an address to the pool whose usable addresses hold it: the pools' spans sorted
 * once, then a binary search per address (pools do not overlap once validated), so a plan of N
 * Services over pools of R entries costs O((N + R) log R), not O(N × R).
 */
function poolIndex(pools: readonly AddressPool[]): (ip: string) => string | undefined {
  const spans = pools.flatMap((pool) =>
    ([4, 6] as const).flatMap((family) =>
      pool.usable[family].map((span) => ({ family, ...span, pool: pool.name }))
    )
  ).sort(compareRangeStarts);
  return (ip) => {
    const parsed = parseIp(ip);
    if (!parsed) return undefined;
    let lo = 0, hi = spans.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const span = spans[mid]!;
      if (
        span.family > parsed.family || (span.family === parsed.family && span.first > parsed.value)
      ) {
        hi = mid - 1;
      } else if (span.family === parsed.family && parsed.value <= span.last) return span.pool;
      else lo = mid + 1;
    }
    return undefined;
  };
}

function byAge(a: V1Service, b: V1Service): number {
  const ta = time(a), tb = time(b);
  if (ta !== tb) return ta - tb;
  const ka = objectKey(a), kb = objectKey(b);
  return compareCodeUnits(ka, kb);
}

function time(service: V1Service): number {
  const raw: unknown = service.metadata?.creationTimestamp;
  const ms = raw === undefined ? NaN : new Date(raw as string | Date).getTime();
  return Number.isNaN(ms) ? Number.MAX_SAFE_INTEGER : ms;
}

/**
 * The Services as they will be once the leader has allocated: each Service the plan gives new
 * addresses gets them as its ingress; the others stay as they are. `keelson render` feeds them
 * to the announcers' pipelines.
 * @param config the inventory
 * @param services the snapshot's Services
 * @returns copies with the planned ingress
 */
export function convergedServices(config: Config, services: readonly V1Service[]): V1Service[] {
  const planned = new Map(
    planAllocations(config, services).services
      .filter((p) => p.outcome === "allocated")
      .map((p) => [p.serviceKey, p.ips]),
  );
  return services.map((service) => {
    const ips = planned.get(objectKey(service));
    if (!ips) return service;
    return {
      ...service,
      status: {
        ...service.status,
        loadBalancer: { ingress: ips.map((ip) => ({ ip, ipMode: "VIP" })) },
      },
    };
  });
}
