/**
 * The keepalived model: which VRRP instances one serving host runs (a control-plane machine, or a
 * machine a VRRP pool's `served_by` selects), with which VRIDs, priorities, peers and VIPs. Pure
 * and deterministic: the same inventory and the same Service VIPs give the same model on every
 * host, except that host's priorities and source address.
 *
 * Decisions, each with its reason:
 * - VRIDs: the lowest VRID of `[keepalived] vrid_range` is reserved for the IPv4 control-plane
 *   VIP and the next one for the IPv6 control-plane VIP, whether or not they are configured, so
 *   that adding a control-plane VIP later never renumbers the Service groups.
 * - Service VIPs: each VIP belongs to group `fnv1a(address bytes) mod G`, where G is the number
 *   of remaining VRIDs. A VIP's group depends only on its address and the range, so adding or
 *   removing another VIP never moves it. IPv4 and IPv6 groups reuse the same VRIDs (VRRP over
 *   IPv4 and over IPv6 are separate VRID spaces, RFC 5798 §5.2.3; keepalived accepts it).
 * - Inside a group the lowest `max_vips_per_instance` addresses go in `virtual_ipaddress`, the
 *   rest in `virtual_ipaddress_excluded` (held by the same instance, not listed in adverts).
 * - Groups: the control-plane VIP's peers are the control-plane machines; a Service group's peers
 *   are the serving hosts of its VIPs' pool (`vrrp_groups.ts`, which also keeps groups that share
 *   a host, or a multicast segment, on different VRIDs). A host renders only its own groups.
 * - Priorities rotate inside a group: rank = (host index + group index) mod n, priority =
 *   200 - step * rank, so each host is preferred master for a different share of the groups.
 * - `externalTrafficPolicy: Local`: a group holding a Local Service's VIP tracks a file of its own
 *   (`local-v4-g3` in `track_file_dir`) with weight -253: Keelson writes 1 there on a host that
 *   may hold none of the group's Local VIPs (no ready endpoint of theirs on it), which brings that
 *   host's priority down to 1, so a member with a local endpoint takes the group (and its other
 *   VIPs) and the group moves when the endpoints do. A lower priority rather than FAULT: if no
 *   member with an endpoint runs keepalived, the others still hold the group's other VIPs.
 * - Held back (`serving_hold.ts`): a machine not `active` renders no instance; a host whose Node
 *   is not Ready renders no Service instance (the control-plane VIP follows the apiserver). It
 *   stays a peer in the other hosts' files, so nothing renumbers and it takes its share back when
 *   the hold ends; keepalived sends priority 0 for each instance a reload removes, so the others
 *   take over at once.
 * - Preemption: Service groups preempt after a delay (a recovered host takes its share back
 *   once it has been up for `SERVICE_PREEMPT_DELAY_S`); the control-plane VIP never preempts,
 *   because every move drops all API clients' connections and any healthy apiserver will do.
 *
 * @module
 */
import type { Config, Machine } from "../../../src/config/types.ts";
import { isServingHost } from "../../../src/config/pool_serving.ts";
import { daemonPaths } from "../../../src/config/daemon_dir.ts";
import {
  compareIps,
  firstIpOfFamily,
  formatIp,
  type IpAddress as ModelIp,
  type IpFamily,
  parseIp,
} from "../../../src/net/ip.ts";
import { addressOwner } from "../ipam/address_owner.ts";
import { servedAddressChecker } from "./served_addresses.ts";
import { planServiceGroups } from "./vrrp_groups.ts";
import { compareCodeUnits } from "../../../src/text/code_unit_order.ts";
import { type ServingHold, servingHold } from "../serving_hold.ts";

/** One parsed address. Only these numbers, never the text they came from, are rendered. */
export type { ModelIp };

/** One `vrrp_instance`. */
export interface VrrpInstanceModel {
  /** `keelson_cp_v4`, `keelson_v6_g3`, ... (alphabet `[a-z0-9_]`). */
  name: string;
  kind: "control-plane" | "service";
  family: IpFamily;
  vrid: number;
  priority: number;
  /** false: `nopreempt`. */
  preempt: boolean;
  /** Seconds; only when `preempt`. */
  preemptDelayS: number;
  /** The host's own address, when unicast. */
  unicastSrcIp?: ModelIp;
  /** The other members of the group, when unicast (sorted). */
  unicastPeers: ModelIp[];
  /** At most `max_vips_per_instance`, sorted. */
  vips: ModelIp[];
  /** The rest of the group, sorted. */
  excludedVips: ModelIp[];
  /** Tracks the apiserver-health file (control-plane instances). */
  trackApiserver: boolean;
  /** The group's Local-traffic file, when it holds a Local Service's VIP. */
  trackLocal?: LocalTrackModel;
}

/** The file that lowers a Service group's priority on a host without its Local endpoints. */
export interface LocalTrackModel {
  /** `keelson_local_v4_g3` (the `track_file` block's name). */
  name: string;
  /** `<track_file_dir>/local-v4-g3`. */
  path: string;
  /** Whether this host may hold none of the group's Local VIPs: Keelson writes 1, else 0. */
  lowered: boolean;
}

/** The whole keepalived configuration of one host. */
export interface KeepalivedModel {
  /** Machine name (the inventory's name alphabet). */
  host: string;
  interface: string;
  /** advert_int in milliseconds, a multiple of 10 (VRRPv3 centiseconds). */
  advertIntMs: number;
  garpMasterRefreshS: number;
  unicast: boolean;
  /** The `track_file` watched by control-plane instances; undefined when there are none. */
  trackFile?: { name: string; path: string; initValue: 0 | 1 };
  /** keepalived's VRRP notify FIFO, created for `user` (who runs Keelson); undefined: none. */
  notifyFifo?: { path: string; user: string };
  instances: VrrpInstanceModel[];
  /** Service VIPs left out, with the reason (never rendered; for logs). */
  skipped: { value: string; reason: string }[];
  /** Why this host holds its Service VIPs (and maybe the control-plane VIP) back; absent: it does not. */
  withheld?: ServingHold;
}

/** Input of `buildKeepalivedModel`. */
export interface KeepalivedModelInput {
  config: Config;
  /** This machine's name. */
  host: string;
  /**
   * Ingress IPs of the Services Keelson handles; only addresses a served pool holds are rendered
   * (see `servedAddressChecker`), the rest are skipped with a reason.
   */
  serviceVips: readonly string[];
  /**
   * The apiserver-health value keepalived starts from when the track file does not exist yet.
   * Only `true` starts healthy; absent or false fails closed (no control-plane VIP until the
   * probe has seen the apiserver answer).
   */
  controlPlaneHealthy?: boolean;
  /**
   * The user Keelson runs as: keepalived then writes its state changes to a FIFO owned by that
   * user in root's directory beside `track_file_dir` (`src/config/daemon_dir.ts`). Absent: no FIFO (states come from the addresses only).
   */
  notifyFifoUser?: string;
  /**
   * The `externalTrafficPolicy: Local` Service VIPs (canonical text), each with whether this host
   * may hold it (a ready endpoint of its Service here), undefined while not known. Absent: none.
   */
  localVips?: ReadonlyMap<string, boolean | undefined>;
  /**
   * Service instances (`keelson_v4_g3`) that track their Local-traffic file whatever `localVips`
   * says: the root step, which reads a staged file's VIPs back but not the Services' policies.
   */
  localTrackInstances?: ReadonlySet<string>;
  /**
   * This host's Node is Ready, or not known (`serving_hold.ts`): false holds every Service VIP
   * back. Absent (the root step, `render` without a snapshot): counted Ready.
   */
  nodeReady?: boolean;
}

/** Weight of a Local-traffic file: 1 there brings any priority down to 1 (keepalived's floor). */
export const LOCAL_TRACK_WEIGHT = -253;

/** Highest priority handed out (BACKUP instances may use 1..254). */
export const BASE_PRIORITY = 200;
/** Seconds a recovered host waits before taking its Service groups back. */
export const SERVICE_PREEMPT_DELAY_S = 30;
/**
 * The name of the instance that holds the control-plane VIP of one family.
 * @param family 4 or 6
 */
export function controlPlaneInstanceName(family: IpFamily): string {
  return `keelson_cp_v${family}`;
}

/** Name of the `track_file` block. */
export const APISERVER_TRACK_NAME = "keelson_apiserver";
/** File name of the apiserver-health file inside `track_file_dir`. */
export const APISERVER_TRACK_FILE = "apiserver-health";
/** Absolute paths Keelson renders (the rule lives with the schema, which enforces it). */
export { SAFE_PATH_REGEXP } from "../../../src/config/schema.ts";

/**
 * Builds the keepalived model of one serving host.
 * @param input the configuration, the host's machine name and the Service VIPs
 * @returns the model, or `{ error }` with a sentence naming the field and value
 */
export function buildKeepalivedModel(
  input: KeepalivedModelInput,
): KeepalivedModel | { error: string } {
  const { config, host } = input;
  const ka = config.keepalived;
  // the control-plane VIP's group: the control-plane machines
  const cpPeers = config.machines
    .filter((m) => m.role === "control-plane" && m.state !== "retired")
    .sort((a, b) => compareCodeUnits(a.name, b.name));
  const machine = config.machines.find((m) => m.name === host);
  if (!machine || !isServingHost(config, host)) {
    const serving = config.machines.filter((m) => isServingHost(config, m.name));
    return {
      error: `Cannot render keepalived for host "${host}": it is not a control-plane machine ` +
        `of the inventory nor a machine that serves a pool (serving machines: ` +
        `${serving.map((m) => `"${m.name}"`).join(", ")})`,
    };
  }
  // a machine in maintenance or on a NotReady Node stays a member of its groups on the other
  // hosts (nothing renumbers); it renders the instances it holds back out of its own file
  const withheld = servingHold(config, host, { nodeReady: input.nodeReady ?? true });
  // vrid_range, advert_interval and track_file_dir were checked by config validation (the one
  // validation path: what `keelson check` accepts renders), so they are used as they are
  const [low, high] = ka.vrid_range;
  const advertIntMs = ka.advert_interval.ms;
  const trackPath = `${ka.track_file_dir.replace(/\/+$/, "")}/${APISERVER_TRACK_FILE}`;

  // priorities rotate among a group's members: rank = (host index + group index) mod n
  const priorityFor = (members: readonly Machine[], groupIndex: number): number => {
    const n = members.length;
    const hostIndex = members.findIndex((m) => m.name === host);
    const step = n > 1 ? Math.max(1, Math.min(10, Math.floor((BASE_PRIORITY - 1) / (n - 1)))) : 10;
    return machine.keepalived_priority ?? BASE_PRIORITY - step * ((hostIndex + groupIndex) % n);
  };

  const addressing = (
    members: readonly Machine[],
    family: IpFamily,
  ): Addressing | { error: string } => {
    const own = firstIpOfFamily(machine.internal_ips, family);
    if (!ka.unicast) return { unicastPeers: [] };
    if (!own) {
      return {
        error: `Cannot use unicast VRRP for IPv${family} VIPs on host "${host}": machine ` +
          `"${host}" has no IPv${family} address in internal_ips`,
      };
    }
    const others = members.filter((m) => m.name !== host).map((m) =>
      firstIpOfFamily(m.internal_ips, family)
    )
      .filter((ip): ip is ModelIp => ip !== undefined);
    return { unicastSrcIp: own, unicastPeers: sortIps(others) };
  };

  const instances: VrrpInstanceModel[] = [];
  // a control-plane VIP announced over BGP is BIRD's, not VRRP's
  const cpVips = config.control_plane.announce === "bgp"
    ? []
    : dedupe(config.control_plane.vip.map((v) => parseIp(v)!));
  for (const family of [4, 6] as const) {
    const vips = cpVips.filter((ip) => ip.family === family);
    if (vips.length === 0 || !cpPeers.some((m) => m.name === host)) continue;
    if (withheld?.controlPlane === true) continue;
    const addr = addressing(cpPeers, family);
    if ("error" in addr) return addr;
    instances.push({
      name: controlPlaneInstanceName(family),
      kind: "control-plane",
      family,
      vrid: family === 4 ? low : low + 1,
      priority: priorityFor(cpPeers, 0),
      preempt: false,
      preemptDelayS: 0,
      ...addr,
      vips,
      excludedVips: [],
      trackApiserver: true,
    });
  }

  // only addresses a served pool holds, never a machine's own or the control-plane VIP: the
  // same check as the announcer's per-Service one, run again on whatever reaches the model
  // (addresses read back from the file on disk included)
  const skipped: KeepalivedModel["skipped"] = [];
  const check = servedAddressChecker(config);
  const serviceIps: ModelIp[] = [];
  for (const value of input.serviceVips) {
    if (addressOwner(config, value)?.announce === "bgp") continue; // BIRD's, not VRRP's
    const verdict = check(value);
    if (verdict.ok) serviceIps.push({ family: verdict.family, value: verdict.value });
    else skipped.push({ value, reason: verdict.reason });
  }
  const groupCount = high - low - 1;
  // every group of the segment, planned alike on every host; this host renders its own
  const plan = planServiceGroups(
    config,
    serviceIps,
    (ip) => serviceGroupOf(ip, groupCount),
    groupCount,
  );
  skipped.push(...plan.skipped);
  for (const group of plan.groups) {
    if (withheld !== undefined || !group.members.some((m) => m.name === host)) continue;
    const addr = addressing(group.members, group.family);
    if ("error" in addr) return addr;
    const g = group.index;
    const name = `keelson_v${group.family}_g${g}`;
    const locals = group.vips.filter((ip) => input.localVips?.has(ipKey(ip)));
    const tracked = locals.length > 0 || input.localTrackInstances?.has(name) === true;
    const trackLocal: LocalTrackModel | undefined = !tracked ? undefined : {
      name: `keelson_local_v${group.family}_g${g}`,
      path: `${ka.track_file_dir.replace(/\/+$/, "")}/local-v${group.family}-g${g}`,
      // lowered only on a known verdict for each: unknown endpoints leave the priority alone
      lowered: locals.length > 0 && locals.every((ip) => input.localVips!.get(ipKey(ip)) === false),
    };
    instances.push({
      name,
      kind: "service",
      family: group.family,
      vrid: low + 2 + g,
      // +1 so a host preferred for the control-plane VIP is not also first for group 0
      priority: priorityFor(group.members, g + 1),
      preempt: true,
      preemptDelayS: SERVICE_PREEMPT_DELAY_S,
      ...addr,
      vips: group.vips.slice(0, ka.max_vips_per_instance),
      excludedVips: group.vips.slice(ka.max_vips_per_instance),
      trackApiserver: false,
      ...(trackLocal ? { trackLocal } : {}),
    });
  }

  return {
    host,
    interface: ka.interface,
    advertIntMs,
    garpMasterRefreshS: ka.garp_master_refresh,
    unicast: ka.unicast,
    ...(instances.some((i) => i.trackApiserver)
      ? {
        trackFile: {
          name: APISERVER_TRACK_NAME,
          path: trackPath,
          initValue: input.controlPlaneHealthy === true ? 0 as const : 1 as const,
        },
      }
      : {}),
    ...(input.notifyFifoUser !== undefined
      ? {
        notifyFifo: {
          path: daemonPaths(config).notifyFifo,
          user: input.notifyFifoUser,
        },
      }
      : {}),
    instances,
    skipped,
    ...(withheld ? { withheld } : {}),
  };
}

/**
 * The Service group (0-based) of a VIP: FNV-1a of its address bytes modulo the group count.
 * It depends on nothing but the address and the count, which is what keeps VIPs in place when
 * other VIPs come and go.
 * @param ip the VIP
 * @param groupCount number of Service VRIDs (>= 1)
 * @returns the group index
 */
export function serviceGroupOf(ip: ModelIp, groupCount: number): number {
  const bytes = ip.family === 4 ? 4 : 16;
  let hash = 0x811c9dc5;
  for (let i = bytes - 1; i >= 0; i--) {
    hash ^= Number((ip.value >> BigInt(8 * i)) & 0xffn);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % groupCount;
}

interface Addressing {
  unicastSrcIp?: ModelIp;
  unicastPeers: ModelIp[];
}

function ipKey(ip: ModelIp): string {
  return formatIp(ip.family, ip.value);
}

function sortIps(ips: ModelIp[]): ModelIp[] {
  return [...ips].sort(compareIps);
}

function dedupe(ips: ModelIp[]): ModelIp[] {
  const seen = new Set<string>();
  return sortIps(ips).filter((ip) => {
    const key = ipKey(ip);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
