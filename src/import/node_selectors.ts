/**
 * MetalLB's node selectors (an advertisement's or a BGPPeer's `nodeSelectors`) as a pool's
 * `[pools.served_by]`: the machines that hold or announce its addresses. A selector becomes the
 * keys that say the same (`kubernetes.io/hostname` → machines, node-role labels → roles, other
 * labels → labels); with the cluster's Nodes, the result is checked against what MetalLB selected
 * and, when the keys cannot say it, written as the list of machines it selected. What neither can
 * express comes back as a reason for a comment. Pure.
 *
 * @module
 */
import { matchesServedBy } from "../config/pool_serving.ts";
import { NAME_REGEXP } from "../config/schema.ts";
import { LABEL_KEY, LABEL_VALUE } from "../config/service_allocation_schema.ts";
import type { Pool } from "../config/types.ts";
import { compareCodeUnits } from "../text/code_unit_order.ts";
import { selectorText, selects } from "./label_match.ts";
import { CONTROL_PLANE_LABELS, type ImportedMachine } from "./machines.ts";
import type { MetallbSelector } from "./metallb_schema.ts";
import type { ServingMachines } from "./inventory_fragments.ts";

/** A `[pools.served_by]` value. */
export type ServedBy = NonNullable<Pool["served_by"]>;

/** What a pool's node selectors become. */
export type NodeSelection =
  | {
    /** No selector narrows, or it selects just the control-plane machines: no table needed. */
    readonly kind: "default";
  }
  | {
    readonly kind: "served_by";
    readonly servedBy: ServedBy;
    /** Labels to write on imported machines (by name) so that `servedBy.labels` selects them. */
    readonly machineLabels: ReadonlyMap<string, Readonly<Record<string, string>>>;
    /** Where the value came from, for the comment above the table. */
    readonly note: string;
  }
  | {
    /** Neither keys nor, with the Nodes, a list of machines can say it. */
    readonly kind: "inexpressible";
    readonly reason: string;
  };

const HOSTNAME_LABEL = "kubernetes.io/hostname";
const WORKER_LABEL = "node-role.kubernetes.io/worker";
/** Label keys the inventory refuses on machines (the node controller ignores them). */
const RESERVED_LABEL_KEY = /(^|\.)(kubernetes|k8s)\.io\//;

/**
 * The `served_by` value for a pool announced by some sources (advertisements, or peers), each
 * selecting Nodes with its `nodeSelectors` (ORed; an empty list selects every Node).
 * @param sources each source's selectors
 * @param machines the machines imported from the cluster's Nodes; empty when none were read
 * @returns the selection, or the reason it cannot be written
 * @example nodeSelection([[{ matchLabels: { "kubernetes.io/hostname": "w-1" } }]], []) // served_by machines ["w-1"]
 */
export function nodeSelection(
  sources: readonly (readonly MetallbSelector[])[],
  machines: readonly ImportedMachine[],
): NodeSelection {
  // a source without selectors announces from every Node; Keelson's default stays (narrower)
  if (sources.length === 0 || sources.some((s) => s.length === 0)) return { kind: "default" };
  const selectors = sources.flat();
  const shown = [...new Set(selectors.map(selectorText))].join(" OR ");
  const structural = unionOf(selectors.map(translate));
  if (machines.length === 0) return unresolved(structural, shown);

  const chosen = machines.filter((m) => selectors.some((s) => selects(s, nodeLabels(m))));
  if (chosen.length === 0) {
    return { kind: "inexpressible", reason: `selects no Node of the cluster (${shown})` };
  }
  const controlPlane = machines.filter((m) => m.role === "control-plane");
  if (sameNames(chosen, controlPlane)) return { kind: "default" };
  if (!("reason" in structural)) {
    const written = machines.map((m) => ({
      name: m.name,
      role: m.role,
      labels: pick(m.labels, Object.keys(structural.labels ?? {})),
    }));
    const matched = machines.filter((_, i) =>
      matchesServedBy(written[i]!, { served_by: structural })
    );
    if (sameNames(matched, chosen)) {
      const machineLabels = new Map<string, Record<string, string>>();
      for (const w of written) {
        if (Object.keys(w.labels).length > 0 && chosen.some((m) => m.name === w.name)) {
          machineLabels.set(w.name, w.labels);
        }
      }
      return {
        kind: "served_by",
        servedBy: structural,
        machineLabels,
        note: `From spec.nodeSelectors (${shown}); it selected ${names(chosen)} of the cluster.`,
      };
    }
  }
  const bad = chosen.find((m) => !NAME_REGEXP.test(m.name));
  if (bad !== undefined) {
    return {
      kind: "inexpressible",
      reason: `selects Node "${bad.name}", whose name is not one a machine may have`,
    };
  }
  return {
    kind: "served_by",
    servedBy: { machines: chosen.map((m) => m.name).sort(compareCodeUnits) },
    machineLabels: new Map(),
    note: `From spec.nodeSelectors (${shown}), resolved against the cluster's Nodes: the ` +
      "machines it selected (a Node added later is not included; add it here).",
  };
}

/** Without the Nodes: only what the keys alone say. */
function unresolved(structural: ServedBy | { reason: string }, shown: string): NodeSelection {
  if ("reason" in structural) {
    return {
      kind: "inexpressible",
      reason: `${structural.reason}; import with --kubeconfig to resolve it against the Nodes`,
    };
  }
  if (isDefault(structural)) return { kind: "default" };
  const labels = Object.entries(structural.labels ?? {});
  return {
    kind: "served_by",
    servedBy: structural,
    machineLabels: new Map(),
    note: `From spec.nodeSelectors (${shown}).` +
      (labels.length > 0
        ? ` Give the machines that serve it labels = { ${
          labels.map(([k, v]) => `${JSON.stringify(k)} = ${JSON.stringify(v)}`).join(", ")
        } }.`
        : ""),
  };
}

/** One selector as served_by keys: every part must hold, as every key of served_by must. */
function translate(selector: MetallbSelector): ServedBy | { reason: string } {
  let machines: string[] | undefined;
  let roles: ("control-plane" | "worker")[] | undefined;
  const labels: Record<string, string> = {};
  const narrowMachines = (names: readonly string[]) => {
    machines = machines === undefined ? [...names] : machines.filter((n) => names.includes(n));
  };
  const narrowRoles = (role: "control-plane" | "worker") => {
    roles = roles === undefined ? [role] : roles.filter((r) => r === role);
  };
  const parts: { key: string; operator: string; values: readonly string[] }[] = [
    ...Object.entries(selector.matchLabels ?? {}).map(([key, value]) => ({
      key,
      operator: "In",
      values: [value],
    })),
    ...(selector.matchExpressions ?? []).map((e) => ({ ...e, values: e.values ?? [] })),
  ];
  for (const { key, operator, values } of parts) {
    if (key === HOSTNAME_LABEL && operator === "In") {
      const bad = values.find((v) => !NAME_REGEXP.test(v));
      if (bad !== undefined) {
        return { reason: `"${bad}" is not a name a machine may have` };
      }
      narrowMachines(values);
    } else if (CONTROL_PLANE_LABELS.includes(key) && (operator === "Exists" || operator === "In")) {
      narrowRoles("control-plane");
    } else if (
      CONTROL_PLANE_LABELS.includes(key) && operator === "DoesNotExist" ||
      key === WORKER_LABEL && (operator === "Exists" || operator === "In")
    ) {
      narrowRoles("worker");
    } else if (operator === "In" && values.length === 1) {
      const value = values[0]!;
      if (RESERVED_LABEL_KEY.test(key)) {
        return {
          reason: `"${key}" is in the kubernetes.io or k8s.io namespace, which ` +
            "inventory labels may not use",
        };
      }
      if (!LABEL_KEY.safeParse(key).success || !LABEL_VALUE.safeParse(value).success) {
        return { reason: `"${key}=${value}" is not a label an inventory may hold` };
      }
      if (Object.hasOwn(labels, key) && labels[key] !== value) {
        return {
          reason: `${selectorText(selector)} selects nothing (${key} must have two values)`,
        };
      }
      labels[key] = value;
    } else {
      return { reason: `"${key}" ${operator} has no served_by equivalent` };
    }
  }
  if (machines?.length === 0 || roles?.length === 0) {
    return { reason: `${selectorText(selector)} selects nothing` };
  }
  const out: ServedBy = {};
  if (machines !== undefined) out.machines = [...new Set(machines)].sort(compareCodeUnits);
  if (roles !== undefined) out.roles = roles;
  if (Object.keys(labels).length > 0) out.labels = labels;
  if (Object.keys(out).length === 0) return { reason: "an empty selector selects every Node" };
  return out;
}

/** Selectors ORed: served_by holds one selection, so only unions of one kind fit. */
function unionOf(parts: readonly (ServedBy | { reason: string })[]): ServedBy | { reason: string } {
  const failed = parts.find((p) => "reason" in p);
  if (failed !== undefined) return failed;
  const values = parts as ServedBy[];
  const distinct = [...new Map(values.map((v) => [JSON.stringify(v), v])).values()];
  if (distinct.length === 1) return distinct[0]!;
  const only = (key: keyof ServedBy) =>
    distinct.every((v) => Object.keys(v).length === 1 && v[key] !== undefined);
  if (only("machines")) {
    return {
      machines: [...new Set(distinct.flatMap((v) => v.machines!))].sort(compareCodeUnits),
    };
  }
  if (only("roles")) {
    const roles = new Set(distinct.flatMap((v) => v.roles!));
    return { roles: (["control-plane", "worker"] as const).filter((r) => roles.has(r)) };
  }
  return { reason: "selectors ORed over different keys, which one served_by cannot select" };
}

function isDefault(servedBy: ServedBy): boolean {
  return servedBy.machines === undefined && servedBy.labels === undefined &&
    servedBy.roles?.length === 1 && servedBy.roles[0] === "control-plane";
}

/** A Node's labels; kubelet always sets the hostname label, so a Node lacking it gets its name. */
function nodeLabels(machine: ImportedMachine): Record<string, string> {
  return Object.hasOwn(machine.labels, HOSTNAME_LABEL)
    ? { ...machine.labels }
    : { ...machine.labels, [HOSTNAME_LABEL]: machine.name };
}

function pick(labels: Readonly<Record<string, string>>, keys: readonly string[]) {
  const out: Record<string, string> = {};
  for (const key of keys) if (Object.hasOwn(labels, key)) out[key] = labels[key]!;
  return out;
}

function sameNames(a: readonly ImportedMachine[], b: readonly ImportedMachine[]): boolean {
  const x = a.map((m) => m.name).sort(compareCodeUnits);
  const y = b.map((m) => m.name).sort(compareCodeUnits);
  return x.length === y.length && x.every((n, i) => n === y[i]);
}

function names(machines: readonly ImportedMachine[]): string {
  const sorted = machines.map((m) => `"${m.name}"`).sort(compareCodeUnits);
  return sorted.length > 8
    ? `${sorted.slice(0, 8).join(", ")} and ${sorted.length - 8} more`
    : sorted.join(", ");
}

/** An advertisement as the pool's sources see it. */
export interface AdvertisementNodes {
  /** Its `nodeSelectors` (empty: every Node). */
  readonly nodeSelectors: readonly MetallbSelector[];
  /** BGP: the peers it names in `peers` (empty: every peer). */
  readonly peers?: readonly string[];
}

/** A BGPPeer as the pool's sources see it. */
export interface PeerNodes {
  readonly name: string;
  /** Its `nodeSelectors` (empty: every Node peers). */
  readonly nodeSelectors: readonly MetallbSelector[];
}

/**
 * Which selectors choose a pool's serving Nodes. The advertisements' (L2: the Nodes that may
 * answer ARP/NDP; BGP: the Nodes that announce); for BGP advertisements that select every Node,
 * the node selectors of the peers they announce to, when those peers agree: a Node with no
 * session announces nothing, so the peers' Nodes are the pool's.
 * @param advertisements the advertisements that announce the pool, of the kind Keelson uses
 * @param peers every BGPPeer (none for an L2 pool)
 * @returns the sources for `nodeSelection`, whether they are the peers', and a note when peers
 *   select different Nodes
 */
export function poolSelectorSources(
  advertisements: readonly AdvertisementNodes[],
  peers: readonly PeerNodes[],
): { sources: MetallbSelector[][]; fromPeers?: true; note?: string } {
  const own = advertisements.map((a) => [...a.nodeSelectors]);
  if (own.some((s) => s.length > 0) || peers.length === 0) return { sources: own };
  const named = new Set(advertisements.flatMap((a) => a.peers ?? []));
  const everyPeer = advertisements.some((a) => (a.peers ?? []).length === 0);
  const reached = peers.filter((p) => everyPeer || named.has(p.name));
  const distinct = new Set(reached.map((p) => JSON.stringify(p.nodeSelectors)));
  if (reached.length === 0 || reached.every((p) => p.nodeSelectors.length === 0)) {
    return { sources: own };
  }
  if (distinct.size === 1) return { sources: [[...reached[0]!.nodeSelectors]], fromPeers: true };
  return {
    sources: own,
    note:
      `The BGPPeers this pool is announced to (${
        reached.map((p) => `"${p.name}"`).join(", ")
      }) select different Nodes with spec.nodeSelectors: each [[bgp.peers]] below chooses its ` +
      "hosts; the pool is served by the control-plane machines unless [pools.served_by] says " +
      "otherwise.",
  };
}

/**
 * The machines that serve a pool, as the inventory fragments hold them: its selection when it is
 * a `served_by`, else Keelson's default (the control-plane machines).
 * @param selection the pool's selection
 * @returns the pool fragment's `servingMachines`
 */
export function servingMachinesOf(selection: NodeSelection): ServingMachines {
  if (selection.kind !== "served_by") return { every: "control-plane" };
  return {
    servedBy: selection.servedBy,
    note: { text: selection.note },
    machineLabels: selection.machineLabels,
  };
}

/**
 * The labels each imported machine must carry for the pools' `served_by` to select it, merged
 * across pools.
 * @param serving every pool's serving machines
 * @returns labels by machine name
 */
export function servedByLabels(
  serving: readonly ServingMachines[],
): Map<string, Record<string, string>> {
  const out = new Map<string, Record<string, string>>();
  for (const s of serving) {
    if (!("servedBy" in s)) continue;
    for (const [name, wanted] of s.machineLabels) out.set(name, { ...out.get(name), ...wanted });
  }
  return out;
}

/** The advertisements that announce a pool, as the importer groups them. */
export interface PoolAdvertisements {
  readonly l2: readonly { readonly ad: { readonly spec: AdvertisementSpec } }[];
  readonly bgp: readonly { readonly ad: { readonly spec: AdvertisementSpec } }[];
}

/** The spec fields of an advertisement this module reads. */
interface AdvertisementSpec {
  readonly nodeSelectors?: MetallbSelector[] | null;
  readonly peers?: string[] | null;
}

/** The BGPPeers, as the importer holds them. */
export type PeerObjects = readonly {
  readonly peer: {
    readonly metadata: { readonly name: string };
    readonly spec: { readonly nodeSelectors?: MetallbSelector[] | null };
  };
}[];

/**
 * A pool's serving selection: from its BGP advertisements (and peers) when it is announced over
 * BGP, else from its L2 advertisements.
 * @param how the pool's advertisements
 * @param peers every BGPPeer
 * @param machines the machines imported from the Nodes; empty when none were read
 * @returns the selection, whether the peers chose it, and a note when peers disagree
 */
export function poolServing(
  how: PoolAdvertisements,
  peers: PeerObjects,
  machines: readonly ImportedMachine[],
): { selection: NodeSelection; fromPeers?: true; note?: string } {
  const { sources, fromPeers, note } = how.bgp.length > 0
    ? poolSelectorSources(
      how.bgp.map(({ ad }) => ({
        nodeSelectors: ad.spec.nodeSelectors ?? [],
        peers: ad.spec.peers ?? [],
      })),
      peers.map(({ peer }) => ({
        name: peer.metadata.name,
        nodeSelectors: peer.spec.nodeSelectors ?? [],
      })),
    )
    : poolSelectorSources(
      how.l2.map(({ ad }) => ({ nodeSelectors: ad.spec.nodeSelectors ?? [] })),
      [],
    );
  return {
    selection: nodeSelection(sources, machines),
    ...(fromPeers ? { fromPeers } : {}),
    ...(note !== undefined ? { note } : {}),
  };
}

/**
 * The imported machines, with the workers a BGP pool's selection serves marked as BIRD hosts:
 * they peer with the routers as the control-plane machines do.
 * @param machines the machines imported from the Nodes
 * @param pools every pool's advertisements
 * @param peers every BGPPeer
 * @returns the same machines, marked
 */
export function markBgpHosts(
  machines: readonly ImportedMachine[],
  pools: readonly PoolAdvertisements[],
  peers: PeerObjects,
): ImportedMachine[] {
  const servedBy = pools.filter((how) => how.bgp.length > 0)
    .map((how) => poolServing(how, peers, machines).selection)
    .flatMap((s) => s.kind === "served_by" ? [s.servedBy] : []);
  return machines.map((m) =>
    m.role === "worker" && servedBy.some((s) => matchesServedBy(m, { served_by: s }))
      ? { ...m, runsBird: true }
      : m
  );
}
