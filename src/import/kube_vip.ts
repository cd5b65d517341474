/**
 * `keelson import kube-vip`: kube-vip-cloud-provider's `kubevip` ConfigMap (kube-system)
 * translated into Keelson pools, as kube-vip looks them up for a Service's namespace: cidr-NS,
 * cidr-global, range-NS, range-global, the first present. A namespace whose first key is its own
 * gets a pool used by that namespace only; the global key is a pool for every namespace; a key
 * never reached is a comment. A value is read as CIDRs when it holds a "/" and as ranges
 * otherwise, whatever its key, split on commas as kube-vip splits it. Each pool holds exactly the
 * addresses kube-vip hands out, which never end in .0 or .255 (IPv4) and, with
 * `skip-end-ips-in-cidr`, never are a CIDR's first or last. kube-vip counts addresses in use per
 * namespace, so its pools may overlap; Keelson's may not, and an overlap is refused, naming it.
 * Every other key is a comment saying what it did and what to do instead. The pools' addresses
 * are read in `kube_vip_pools.ts`; the inventory is decided as fragments and written by the one
 * writer (`inventory_writer.ts`). Pure.
 *
 * @module
 */
import type { V1Node } from "@kubernetes/client-node";
import * as z from "zod/v4";
import { NAME_REGEXP } from "../config/schema.ts";
import {
  type Entry,
  keyEntry,
  type Note,
  type NoteBlock,
  noteEntry,
  type PoolFragment,
  type TableFragment,
} from "./inventory_fragments.ts";
import { writeInventory } from "./inventory_writer.ts";
import { machinePlaceholder, nodeMachines } from "./machines.ts";
import { keelsonAddresses } from "./pool_addresses.ts";
import { lookupPools, planPool, type PoolPlan, refuseOverlaps } from "./kube_vip_pools.ts";
import { ImportError, parseObject, readSourceObjects } from "./source_objects.ts";

/** How kube-vip announced the addresses (its DaemonSet's `vip_arp` / `bgp_enable`). */
export type KubeVipAnnounce = "vrrp" | "bgp";

/** What the translation needs besides the file. */
export interface KubeVipImportOptions {
  /** The file name, for messages and the header. */
  source: string;
  /** The cluster's Nodes, when a kubeconfig was given. */
  nodes?: readonly V1Node[];
  /** How kube-vip announced: ARP/NDP (→ VRRP) or BGP; undefined when not said. */
  announce?: KubeVipAnnounce;
}

/** The ConfigMap keys kube-vip-cloud-provider reads (README, pkg/config, pkg/provider). */
export const KUBE_VIP_KEYS: Readonly<Record<string, string>> = {
  "cidr-<namespace>": "pools.addresses, pools.service_allocation.namespaces",
  "range-<namespace>": "pools.addresses, pools.service_allocation.namespaces",
  "cidr-global": "pools.addresses (pool for every namespace)",
  "range-global": "pools.addresses (pool for every namespace)",
  "skip-end-ips-in-cidr": "pools.reserved",
  "allow-share-<namespace>": "comment",
  "allow-share-global": "comment",
  "interface-global": "keepalived.interface",
  "interface-<namespace>": "comment",
  "search-order": "comment",
};

const value = z.union([z.string().max(1_000_000), z.boolean(), z.number()]).transform(String);
const ConfigMapSchema = z.looseObject({
  metadata: z.looseObject({ name: z.string().max(253), namespace: z.string().max(63).optional() }),
  data: z.record(z.string().max(253), value).nullish(),
});

/**
 * Translates the `kubevip` ConfigMap into an inventory.
 * @param text the file `kubectl get configmap kubevip -n kube-system -o yaml` wrote
 * @param options the file name, the Nodes when read, and how kube-vip announced
 * @returns the inventory text
 * @throws {ImportError} naming file, line and key when the file cannot be read as that ConfigMap
 */
export function importKubeVip(text: string, options: KubeVipImportOptions): string {
  const objects = readSourceObjects(text, options.source).filter((o) => o.kind === "ConfigMap");
  const object = objects.find((o) => o.name === "kubevip") ?? objects[0];
  if (object === undefined) {
    throw new ImportError(
      `${options.source}: holds no ConfigMap; export it with kubectl get configmap kubevip ` +
        "-n kube-system -o yaml",
    );
  }
  const data = parseObject(object, ConfigMapSchema).data ?? {};
  const header: Note[] = [{
    text: `Keelson inventory imported from kube-vip-cloud-provider's ConfigMap ${object.name} ` +
      `(${options.source}) by keelson import kube-vip. Review every comment that starts with ` +
      '"kube-vip": each is a setting Keelson has no equivalent for, with what to do instead. ' +
      "Then: keelson check --config THIS_FILE, and keelson plan --config THIS_FILE --current " +
      "none --kubeconfig FILE (exit 0: every Service kept) before Keelson takes over " +
      "(docs/migration.md).\n\n" +
      "Services keep their addresses: Keelson reads the kube-vip.io/loadbalancerIPs " +
      "annotation kube-vip-cloud-provider wrote. A namespace pool is tried before the global " +
      "pool; unlike kube-vip, a Service whose namespace pool is full may get an address from " +
      "the global pool.",
  }];
  for (const key of Object.keys(data)) {
    if (/^(cidr|range|allow-share|interface)-./.test(key)) continue;
    if (key === "search-order" || key === "skip-end-ips-in-cidr") continue;
    header.push({
      text: `kube-vip ${key} = ${JSON.stringify(data[key])}: not a key kube-vip-cloud-provider ` +
        "documents; nothing in Keelson reads it.",
    });
  }
  if (object.name !== "kubevip") {
    header.push({
      text: `(the file holds no ConfigMap named kubevip; read ConfigMap ${object.name})`,
    });
  }
  const known = new Set<string>();
  const keyNote = (key: string, what: string): Note => {
    known.add(key);
    return { text: `kube-vip ${key} = ${JSON.stringify(data[key])}: ${what}` };
  };
  if (data["search-order"] !== undefined) {
    header.push(keyNote(
      "search-order",
      "Keelson hands out the lowest free address of a pool; Services keep the ones they hold.",
    ));
  }
  const skipEnds = data["skip-end-ips-in-cidr"] === "true";
  if (data["skip-end-ips-in-cidr"] !== undefined) {
    header.push(keyNote(
      "skip-end-ips-in-cidr",
      skipEnds
        ? "the first and last address of each CIDR below are never handed out (a Keelson CIDR " +
          "skips them itself; elsewhere they are reserved)."
        : 'only "true" turns it on; CIDRs below hand out every address.',
    ));
  }
  const settings = announceTables(options.announce, data, known);
  const { pools, shadowed } = lookupPools(data);
  const planned = pools.map((pool) => planPool(object, pool, skipEnds, data));
  refuseOverlaps(object, planned);

  const poolBlocks: (PoolFragment | NoteBlock)[] = [];
  if (pools.length > 0) {
    poolBlocks.push({
      blankBefore: true,
      notes: [{
        text:
          "Address pools, as kube-vip-cloud-provider looks them up for a Service's namespace NS:\n" +
          "cidr-NS, then cidr-global, then range-NS, then range-global; the first key present " +
          "wins, and its value is read as CIDRs when it holds a /, as ranges otherwise.",
      }],
    });
  }
  poolBlocks.push({
    blankBefore: false,
    notes: shadowed.map(({ key, by }) =>
      keyNote(key, `never used, as kube-vip finds ${by} first; not imported.`)
    ),
  });
  for (const plan of planned) {
    known.add(plan.pool.key);
    poolBlocks.push(poolFragment(plan, data, known, options.announce ?? "vrrp"));
  }
  const globalShare = shareSetting(data["allow-share-global"]);
  const after: Note[] = [];
  for (const key of Object.keys(data)) {
    if (known.has(key) || !/^(allow-share|interface)-./.test(key)) continue;
    const namespace = key.replace(/^(allow-share|interface)-/, "");
    after.push(keyNote(
      key,
      key === "allow-share-global"
        ? `the sharing setting of every namespace without its own allow-share key (${
          globalShare ? "Services with disjoint ports shared an address" : "no sharing"
        }); Keelson shares an address only between Services annotated with the same ` +
          "keelson.io/allow-shared-ip (or metallb.io/allow-shared-ip) value."
        : `namespace "${namespace}" has no pool of its own, so its Services take the global ` +
          "pool; " + (key.startsWith("interface-")
            ? "Keelson holds every VIP on [keepalived] interface."
            : "Keelson shares an address only between Services annotated with the same " +
              "keelson.io/allow-shared-ip value."),
    ));
  }
  poolBlocks.push({ blankBefore: false, notes: after });
  if (pools.length === 0) {
    throw new ImportError(
      `${object.at(["data"])}: ConfigMap "${object.name}" has no cidr-* or range-* key, so no ` +
        "pool to import",
    );
  }
  return writeInventory({
    header,
    settings,
    pools: poolBlocks,
    machines: options.nodes ? nodeMachines(options.nodes) : machinePlaceholder(),
  });
}

/** strconv.ParseBool, as kube-vip reads allow-share-*; anything else is false. */
function shareSetting(text: string | undefined): boolean {
  return text !== undefined && ["1", "t", "T", "TRUE", "true", "True"].includes(text);
}

/** `[load_balancer]`, `[bgp]` (with `--announce bgp`) and `[keepalived]`. */
function announceTables(
  announce: KubeVipAnnounce | undefined,
  data: Record<string, string>,
  known: Set<string>,
): TableFragment[] {
  const tables: TableFragment[] = [{
    header: "[load_balancer]",
    notes: [],
    entries: [noteEntry(
      "kube-vip-cloud-provider with KUBEVIP_ENABLE_LOADBALANCERCLASS=true served only Services of\n" +
        'spec.loadBalancerClass "kube-vip.io/kube-vip-class" (or KUBEVIP_CUSTOM_LOADBALANCERCLASS_NAME); ' +
        "if so, uncomment:",
      '# class = "kube-vip.io/kube-vip-class"',
    )],
  }];
  if (announce === "bgp") {
    tables.push({
      header: "[bgp]",
      notes: [],
      entries: [noteEntry(
        "kube-vip announced over BGP (--announce bgp): copy its DaemonSet's bgp_as and " +
          "bgp_peers (or bgp_peeraddress,\nbgp_peeras) here and uncomment:",
        "# asn = 64513",
        "",
        "# [[bgp.peers]]",
        '# name = "tor-a"',
        '# address = "10.0.0.1"',
        "# asn = 64512",
      )],
    });
  }
  const global = data["interface-global"];
  if (global !== undefined) known.add("interface-global");
  tables.push({
    header: "[keepalived]",
    notes: [],
    entries: global !== undefined && NAME_REGEXP.test(global) && global.length <= 15
      ? [
        noteEntry("From interface-global: the interface keepalived holds the VIPs on."),
        keyEntry("interface", global),
      ]
      : [noteEntry(
        (announce === undefined
          ? "kube-vip's mode (ARP or BGP) lives in its DaemonSet, not in this ConfigMap; " +
            "imported as ARP (keepalived, VRRP).\nImport with --announce bgp if kube-vip ran " +
            "with bgp_enable.\n"
          : "") +
          "Set the interface keepalived holds the VIPs on (kube-vip's vip_interface); it must " +
          "carry the machines' internal_ips:",
        '# interface = "eth0"',
      )],
  });
  return tables;
}

/** One key's pool, or the note saying why it is none (kube-vip's DHCP mode). */
function poolFragment(
  plan: PoolPlan,
  data: Record<string, string>,
  known: Set<string>,
  announce: KubeVipAnnounce,
): PoolFragment | NoteBlock {
  const { pool } = plan;
  const text = data[pool.key]!;
  const ownShare = `allow-share-${pool.namespace}`;
  if (plan.dhcp) {
    for (const key of [ownShare, `interface-${pool.namespace}`]) {
      if (data[key] !== undefined) known.add(key);
    }
    return {
      blankBefore: true,
      notes: [{
        text: `kube-vip ${pool.key} = ${JSON.stringify(text)}: kube-vip's DHCP mode (each ` +
          "Service leases its own address); Keelson has none, so there is no pool for " +
          (pool.namespace === "global"
            ? "the namespaces without a key of their own"
            : `namespace "${pool.namespace}"`) +
          ". Give its Services a pool of real addresses.",
      }],
    };
  }
  const notes: Note[] = NAME_REGEXP.test(pool.namespace) ? [] : [{
    text: `kube-vip ${pool.key}: "${pool.namespace}" is not a Keelson pool name; rename it.`,
  }];
  const entries: Entry[] = [keyEntry("name", pool.namespace)];
  const { addresses, reserved } = keelsonAddresses(plan.intervals, plan.skipped);
  entries.push(
    noteEntry(
      `From ${pool.key} = ${JSON.stringify(text)}, read as ${plan.isCidr ? "CIDRs" : "ranges"}.`,
    ),
    ...plan.dropped.map((entry) =>
      noteEntry(
        `kube-vip ${pool.key} entry "${entry}": its first address is after its last (or the ` +
          "two are of different families); kube-vip's address set drops it, so it adds no " +
          "address.",
      )
    ),
  );
  if (addresses.length === 0) {
    throw new ImportError(
      `${plan.at}: ${pool.key}: ${JSON.stringify(text)} holds no address kube-vip hands out; ` +
        "fix or remove the key",
    );
  }
  entries.push(keyEntry("addresses", addresses));
  if (reserved.length > 0) {
    entries.push(
      noteEntry(
        "Addresses kube-vip never hands out: IPv4 ending in .0 or .255" +
          (plan.isCidr && data["skip-end-ips-in-cidr"] === "true"
            ? ", and each CIDR's first and last (skip-end-ips-in-cidr)."
            : "."),
      ),
      keyEntry("reserved", reserved),
    );
  }
  entries.push(keyEntry("auto_assign", true), keyEntry("announce", announce));
  // kube-vip reads allow-share-NS, then allow-share-global
  const shareKey = data[ownShare] !== undefined ? ownShare : "allow-share-global";
  const share = data[shareKey];
  if (share !== undefined) {
    if (shareKey === ownShare) known.add(ownShare);
    entries.push(noteEntry(
      `kube-vip ${shareKey} = ${JSON.stringify(share)}` +
        (shareKey === ownShare ? "" : ` (no ${ownShare}, so the global setting)`) + ": " +
        (shareSetting(share)
          ? "kube-vip put Services with disjoint ports on one address by itself; Keelson " +
            "shares an address only between Services annotated with the same " +
            "keelson.io/allow-shared-ip (or metallb.io/allow-shared-ip) value. Annotate the " +
            "Services that share before Keelson takes over."
          : "no sharing, as Keelson does for Services without a keelson.io/allow-shared-ip " +
            "annotation."),
    ));
  }
  const iface = data[`interface-${pool.namespace}`];
  if (iface !== undefined && pool.namespace !== "global") {
    known.add(`interface-${pool.namespace}`);
    entries.push(noteEntry(
      `kube-vip interface-${pool.namespace} = ${JSON.stringify(iface)}: Keelson holds every ` +
        "VIP on [keepalived] interface; one interface for all pools.",
    ));
  }
  return {
    header: "[[pools]]",
    name: pool.namespace,
    notes,
    entries,
    servingMachines: { every: "control-plane" },
    ...(pool.namespace === "global" ? {} : {
      serviceAllocation: {
        header: "[pools.service_allocation]",
        notes: [{ text: `Only Services of namespace "${pool.namespace}", as ${pool.key} did.` }],
        entries: [keyEntry("namespaces", [pool.namespace])],
      },
    }),
  };
}
