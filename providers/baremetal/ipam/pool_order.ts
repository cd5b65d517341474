/**
 * Which pools may serve a Service, and in what order auto-assignment tries them, after MetalLB's
 * IPAddressPool `serviceAllocation`:
 *
 * 1. only pools with `auto_assign` whose `service_allocation` (namespaces, Service label
 *    selectors) admits the Service;
 * 2. pools with a `service_allocation.priority`, lowest number first;
 * 3. then pools with a `service_allocation` table (or a pool-level `namespaces` list) but no
 *    priority;
 * 4. then pools without either;
 * 5. ties in file order (names are unique, so the order is total).
 *
 * The first pool in that order with a free address of the wanted families wins. One pure
 * function, shared by `run` (the live allocator) and `plan`/`render` (plan_allocations.ts).
 *
 * @module
 */
import { formatSelector, matchesLabels } from "../../../src/kube/label_selector.ts";
import type { AddressPool } from "./pools.ts";

/** What pool selection reads of a Service. */
export interface SelectedService {
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
}

/**
 * Why the pool does not serve the Service, or undefined when it does.
 * @param pool a built pool
 * @param service the Service's namespace and labels
 * @returns a sentence naming the pool and the rule, e.g. `pool "a" allows namespaces "x" but not "y"`
 */
export function poolRefusal(pool: AddressPool, service: SelectedService): string | undefined {
  if (pool.namespaces.length > 0 && !pool.namespaces.includes(service.namespace)) {
    return `pool "${pool.name}" allows namespaces ${
      pool.namespaces.map((n) => `"${n}"`).join(", ")
    } but not "${service.namespace}"`;
  }
  if (
    pool.serviceSelectors.length > 0 &&
    !pool.serviceSelectors.some((s) => matchesLabels(s, service.labels))
  ) {
    return `pool "${pool.name}" serves Services matching ${
      pool.serviceSelectors.map((s) => `"${formatSelector(s)}"`).join(" or ")
    }, and this Service's labels match none`;
  }
  return undefined;
}

/**
 * The order in which auto-assignment tries pools (rules 2–5 above), independent of any Service.
 * @param a a pool
 * @param b another pool
 * @returns negative when `a` is tried first
 */
export function comparePoolOrder(a: AddressPool, b: AddressPool): number {
  const rank = (p: AddressPool) => (p.priority !== undefined ? 0 : p.selects ? 1 : 2);
  return rank(a) - rank(b) ||
    (a.priority ?? 0) - (b.priority ?? 0) ||
    a.order - b.order;
}

/**
 * The pools auto-assignment tries for a Service, in order (rules 1–5 above).
 * @param pools every built pool, in any order
 * @param service the Service's namespace and labels
 * @returns the auto-assign pools that admit it, first to try first
 */
export function poolsToTry(
  pools: readonly AddressPool[],
  service: SelectedService,
): AddressPool[] {
  return pools.filter((p) => p.autoAssign && poolRefusal(p, service) === undefined)
    .sort(comparePoolOrder);
}
