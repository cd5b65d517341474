/**
 * `keelson import kube-vip`: kube-vip-cloud-provider's `kubevip` ConfigMap (kube-system)
 * translated into Keelson pools. `cidr-<namespace>` / `range-<namespace>` become a pool used by
 * that namespace only (`cidr-global` / `range-global`: a pool for every namespace); each pool
 * holds exactly the addresses kube-vip-cloud-provider hands out, which never end in .0 or .255
 * (IPv4) and, with `skip-end-ips-in-cidr`, never are a CIDR's first or last. Every other key is
 * a comment saying what it did and what to do instead. Pure.
 *
 * @module
 */
import type { V1Node } from "@kubernetes/client-node";
import { z } from "zod";
import { type AddressInterval, mergeIntervals } from "../config/pool_size.ts";
import { NAME_REGEXP } from "../config/schema.ts";
import { parseIp } from "../net/ip.ts";
import { errorMessage } from "../log/error_message.ts";
import { writeMachinePlaceholder, writeNodeMachines } from "./machines.ts";
import { dotZeroAndBroadcast, keelsonAddresses } from "./pool_addresses.ts";
import {
  ImportError,
  parseObject,
  readSourceObjects,
  type SourceObject,
} from "./source_objects.ts";
import { TomlLines } from "./toml_text.ts";

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
  /** Receives one sentence per kube-vip behaviour the inventory cannot keep as it was. */
  restrictionsLost?: string[];
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

/** The special "CIDR" that makes kube-vip hand out 0.0.0.0 (its DHCP mode). */
const DHCP = "0.0.0.0/32";

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
  const out = new TomlLines();
  out.comment(
    `Keelson inventory imported from kube-vip-cloud-provider's ConfigMap ${object.name} ` +
      `(${options.source}) by keelson import kube-vip. Review every comment that starts with ` +
      '"kube-vip": each is a setting Keelson has no equivalent for, with what to do instead. ' +
      "Then: keelson check --config THIS_FILE, and keelson plan --config THIS_FILE --current " +
      "none --kubeconfig FILE (exit 0: every Service kept) before Keelson takes over " +
      "(docs/migration.md).\n\n" +
      "Services keep their addresses: Keelson reads the kube-vip.io/loadbalancerIPs " +
      "annotation kube-vip-cloud-provider wrote. A namespace pool is tried before the global " +
      "pool; unlike kube-vip, a Service whose namespace pool is full may get an address from " +
      "the global pool.",
  );
  for (const key of Object.keys(data)) {
    if (/^(cidr|range|allow-share|interface)-./.test(key)) continue;
    if (key === "search-order" || key === "skip-end-ips-in-cidr") continue;
    out.comment(
      `kube-vip ${key} = ${JSON.stringify(data[key])}: not a key kube-vip-cloud-provider ` +
        "documents; nothing in Keelson reads it.",
    );
  }
  if (object.name !== "kubevip") {
    out.comment(`(the file holds no ConfigMap named kubevip; read ConfigMap ${object.name})`);
  }
  const known = new Set<string>();
  const note = (key: string, what: string) => {
    known.add(key);
    out.comment(`kube-vip ${key} = ${JSON.stringify(data[key])}: ${what}`);
  };
  if (data["search-order"] !== undefined) {
    note(
      "search-order",
      "Keelson hands out the lowest free address of a pool; Services keep the ones they hold.",
    );
  }
  const skipEnds = data["skip-end-ips-in-cidr"] === "true";
  if (data["skip-end-ips-in-cidr"] !== undefined) {
    note(
      "skip-end-ips-in-cidr",
      skipEnds
        ? "the first and last address of each CIDR below are never handed out (a Keelson CIDR " +
          "skips them itself; elsewhere they are reserved)."
        : 'only "true" turns it on; CIDRs below hand out every address.',
    );
  }
  writeAnnounceTables(out, options.announce, data, known);
  const pools = poolKeys(data);

  if (pools.length > 0) {
    out.blank().comment("Address pools, one per namespace key (cidr-*/range-*).");
  }
  for (const pool of pools) {
    for (const key of pool.keys) known.add(key);
    writePool(out, object, pool, skipEnds, data, known, options.announce ?? "vrrp");
  }
  for (const key of Object.keys(data)) {
    if (known.has(key) || !/^(allow-share|interface)-./.test(key)) continue;
    out.comment(
      `kube-vip ${key} = ${JSON.stringify(data[key])}: names a namespace without a pool of its ` +
        "own (no cidr-* or range-* key); nothing to import.",
    );
  }
  if (pools.length === 0) {
    throw new ImportError(
      `${object.at(["data"])}: ConfigMap "${object.name}" has no cidr-* or range-* key, so no ` +
        "pool to import",
    );
  }
  if (options.nodes) writeNodeMachines(out, options.nodes);
  else writeMachinePlaceholder(out);
  return out.text();
}

interface PoolKey {
  /** "global" or the namespace. */
  namespace: string;
  /** The key whose addresses are used (cidr wins over range, as in kube-vip). */
  key: string;
  /** Every key of this namespace that was read. */
  keys: string[];
}

function poolKeys(data: Record<string, string>): PoolKey[] {
  const namespaces = new Set<string>();
  for (const key of Object.keys(data)) {
    const match = /^(cidr|range)-(.+)$/.exec(key);
    if (match) namespaces.add(match[2]!);
  }
  return [...namespaces].sort((a, b) => a === "global" ? -1 : b === "global" ? 1 : a < b ? -1 : 1)
    .map((namespace) => {
      const cidr = `cidr-${namespace}`, range = `range-${namespace}`;
      const keys = [cidr, range].filter((k) => data[k] !== undefined);
      return { namespace, key: data[cidr] !== undefined ? cidr : range, keys };
    });
}

function writeAnnounceTables(
  out: TomlLines,
  announce: KubeVipAnnounce | undefined,
  data: Record<string, string>,
  known: Set<string>,
): void {
  out.table("[load_balancer]");
  out.comment(
    "kube-vip-cloud-provider with KUBEVIP_ENABLE_LOADBALANCERCLASS=true served only Services of\n" +
      'spec.loadBalancerClass "kube-vip.io/kube-vip-class" (or KUBEVIP_CUSTOM_LOADBALANCERCLASS_NAME); ' +
      "if so, uncomment:",
  ).raw('# class = "kube-vip.io/kube-vip-class"');
  if (announce === "bgp") {
    out.table("[bgp]");
    out.comment(
      "kube-vip announced over BGP (--announce bgp): copy its DaemonSet's bgp_as and bgp_peers " +
        "(or bgp_peeraddress,\nbgp_peeras) here and uncomment:",
    ).raw(
      "# asn = 64513",
      "",
      "# [[bgp.peers]]",
      '# name = "tor-a"',
      '# address = "10.0.0.1"',
      "# asn = 64512",
    );
  }
  out.table("[keepalived]");
  const global = data["interface-global"];
  if (global !== undefined) known.add("interface-global");
  if (global !== undefined && NAME_REGEXP.test(global) && global.length <= 15) {
    out.comment("From interface-global: the interface keepalived holds the VIPs on.")
      .set("interface", global);
  } else {
    out.comment(
      (announce === undefined
        ? "kube-vip's mode (ARP or BGP) lives in its DaemonSet, not in this ConfigMap; imported as " +
          "ARP (keepalived, VRRP).\nImport with --announce bgp if kube-vip ran with bgp_enable.\n"
        : "") +
        "Set the interface keepalived holds the VIPs on (kube-vip's vip_interface); it must " +
        "carry the machines' internal_ips:",
    ).raw('# interface = "eth0"');
  }
}

function writePool(
  out: TomlLines,
  object: SourceObject,
  pool: PoolKey,
  skipEnds: boolean,
  data: Record<string, string>,
  known: Set<string>,
  announce: KubeVipAnnounce,
): void {
  const text = data[pool.key]!;
  const isCidr = pool.key.startsWith("cidr-");
  const entries = text.split(",").map((e) => e.trim()).filter((e) => e !== "");
  if (isCidr && entries.every((e) => e === DHCP)) {
    out.blank().comment(
      `kube-vip ${pool.key} = ${JSON.stringify(text)}: kube-vip's DHCP mode (each Service ` +
        "leases its own address); Keelson has none, so there is no pool for namespace " +
        `"${pool.namespace}". Give its Services a pool of real addresses.`,
    );
    for (const key of [`allow-share-${pool.namespace}`, `interface-${pool.namespace}`]) {
      if (data[key] !== undefined) known.add(key);
    }
    return;
  }
  out.table("[[pools]]");
  if (!NAME_REGEXP.test(pool.namespace)) {
    out.comment(`kube-vip ${pool.key}: "${pool.namespace}" is not a Keelson pool name; rename it.`);
  }
  out.set("name", pool.namespace);
  if (pool.keys.length > 1) {
    out.comment(
      `kube-vip ${pool.keys[1]} = ${JSON.stringify(data[pool.keys[1]!])}: unused (kube-vip ` +
        `takes ${pool.key} when both exist).`,
    );
  }
  const intervals: AddressInterval[] = [];
  for (const entry of entries) {
    if (isCidr && entry === DHCP) {
      out.comment(
        `kube-vip ${pool.key} holds ${DHCP}: kube-vip's DHCP mode (each Service leases its own ` +
          "address); Keelson has none. Give those Services a pool of real addresses.",
      );
      continue;
    }
    const interval = isCidr ? cidrInterval(entry) : rangeInterval(entry);
    if (interval === undefined) {
      throw new ImportError(
        `${object.at(["data", pool.key])}: ConfigMap "${object.name}" ${pool.key}: "${entry}" ` +
          `is not ${isCidr ? "a CIDR" : "a range (first-last)"}`,
      );
    }
    intervals.push(interval);
  }
  let skipped: AddressInterval[];
  try {
    skipped = [
      ...dotZeroAndBroadcast(intervals),
      ...(isCidr && skipEnds ? prefixEnds(intervals) : []),
    ];
  } catch (error) {
    throw new ImportError(
      `${object.at(["data", pool.key])}: ConfigMap "${object.name}" ${pool.key}: ` +
        `${errorMessage(error)}; split it`,
    );
  }
  const { addresses, reserved } = keelsonAddresses(intervals, skipped);
  out.comment(`From ${pool.key} = ${JSON.stringify(text)}.`).set("addresses", addresses);
  if (reserved.length > 0) {
    out.comment(
      "Addresses kube-vip never hands out: IPv4 ending in .0 or .255" +
        (isCidr && skipEnds ? ", and each CIDR's first and last (skip-end-ips-in-cidr)." : "."),
    ).set("reserved", reserved);
  }
  out.set("auto_assign", true);
  out.set("announce", announce);
  const share = data[`allow-share-${pool.namespace}`];
  if (share !== undefined) {
    known.add(`allow-share-${pool.namespace}`);
    if (share !== "true") {
      out.comment(
        `kube-vip allow-share-${pool.namespace} = ${JSON.stringify(share)}: no sharing, as ` +
          "Keelson does for Services without a keelson.io/allow-shared-ip annotation.",
      );
    } else {
      out.comment(
        `kube-vip allow-share-${pool.namespace} = "true": kube-vip put Services with disjoint ` +
          "ports on one address by itself; Keelson shares an address only between Services " +
          "annotated with the same keelson.io/allow-shared-ip (or metallb.io/allow-shared-ip) " +
          "value. Annotate the Services that share before Keelson takes over.",
      );
    }
  }
  const iface = data[`interface-${pool.namespace}`];
  if (iface !== undefined && pool.namespace !== "global") {
    known.add(`interface-${pool.namespace}`);
    out.comment(
      `kube-vip interface-${pool.namespace} = ${JSON.stringify(iface)}: Keelson holds every ` +
        "VIP on [keepalived] interface; one interface for all pools.",
    );
  }
  if (pool.namespace !== "global") {
    out.table("[pools.service_allocation]");
    out.comment(`Only Services of namespace "${pool.namespace}", as ${pool.key} did.`)
      .set("namespaces", [pool.namespace]);
  }
}

/** Go's netip.ParsePrefix, masked as netipx.IPSetBuilder.AddPrefix does. */
function cidrInterval(text: string): AddressInterval | undefined {
  const [addr, bits, ...rest] = text.split("/");
  const ip = parseIp(addr ?? "");
  if (!ip || rest.length > 0 || bits === undefined || !/^\d{1,3}$/.test(bits)) return undefined;
  const width = ip.family === 4 ? 32 : 128;
  if (Number(bits) > width || addr!.includes(":") !== (ip.family === 6)) return undefined;
  const host = BigInt(width - Number(bits));
  const first = (ip.value >> host) << host;
  return { family: ip.family, first, last: first + (1n << host) - 1n };
}

function rangeInterval(text: string): AddressInterval | undefined {
  const [a, b, ...rest] = text.split("-").map((s) => s.trim());
  const first = parseIp(a ?? ""), last = parseIp(b ?? "");
  if (rest.length > 0 || !first || !last || first.family !== last.family) return undefined;
  return first.value <= last.value
    ? { family: first.family, first: first.value, last: last.value }
    : undefined;
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
