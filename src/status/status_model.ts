/**
 * The `keelson status` model: every VIP with the Service(s) using it, its pool, the hosts serving
 * it and each host's announcement state; the leader; each host's heartbeat, version and reload
 * state; pool usage; power; and the problems found in them (`decide_problems.ts`). Types only:
 * built by `cluster_status.ts`, shown by `format_status.ts`.
 *
 * @module
 */
import type { Omitted } from "./host_report_limits.ts";
import type { AnnouncementState, AnnouncerReport, HostReport } from "./host_report.ts";
import type { Freshness } from "./observed_freshness.ts";
import type { InventoryAgreement, OtherInventory } from "./inventory_agreement.ts";
import type { PoolServers } from "./pool_servers.ts";

/** One host's state for a VIP: that of its announcement holding the VIP (`host_report.ts`). */
export interface VipHostState {
  host: string;
  instance: string;
  state: AnnouncementState;
}

/** One row of the VIP table. */
export interface VipStatus {
  vip: string;
  /** `namespace/name` of each Service using it; empty for the control-plane VIP. */
  services: string[];
  pool: string | undefined;
  /** Hosts serving it now (fresh heartbeats listing it, renewed since any other claim began). */
  hosts: string[];
  /**
   * Fresh hosts still listing it that have not renewed since another host began to (`vipClaims`):
   * a host that died looks like this until its Lease runs out; not counted.
   */
  superseded: string[];
  /**
   * With no host listing it: fresh hosts whose report was cut at its size limit, so may hold it
   * among what they left out (`partialHosts`).
   */
  maybeOn: string[];
  /**
   * Hosts announcing it over BGP now (fresh heartbeats exporting it to an Established peer).
   * Several is normal: the routers spread flows over them (ECMP).
   */
  bgpHosts: string[];
  /**
   * Hosts not seen renewing (silent, or unconfirmed) whose last heartbeat listed it (whether they
   * still serve it is unknown).
   */
  lastSeenOn: string[];
  /**
   * Per host with an announcement of this VIP (a VRRP instance, a BGP static protocol): its
   * state. Several BGP hosts `holding` it is normal (ECMP), unlike VRRP; two hosts serving it is
   * judged from `hosts`, never from these states.
   */
  states: VipHostState[];
  /**
   * When the serving host got it (ISO, by this reader's clock: the host's own times, which its
   * clock wrote, only give how long before its renewal), when exactly one host serves it.
   */
  since: string | undefined;
  /**
   * `no-service`: a host serves it (VRRP or BGP) while no Service holds it and it is no
   * control-plane VIP — an address Keelson never gave out.
   */
  problem: "no-host" | "split-brain" | "unknown" | "no-service" | undefined;
}

/** One row of the host table. */
export interface HostStatus {
  host: string;
  /** The last renewal time the host wrote (ISO), by its own clock: its claim, never judged. */
  lastHeartbeat: string | undefined;
  /** fresh (seen renewed within its lease), silent (seen unchanged for longer), unconfirmed. */
  freshness: Freshness;
  /**
   * Milliseconds since this reader saw the heartbeat renewed; when it never saw a renewal
   * (`renewalSeen` false), since it first read it: the heartbeat is at least that old.
   */
  ageMs: number;
  /** Whether this reader saw the heartbeat renewed. */
  renewalSeen: boolean;
  leaseMs: number;
  silent: boolean;
  version: string | undefined;
  reload: HostReport["reload"] | undefined;
  /** Each announcer running on the host and its last config apply; empty when unreadable. */
  announcers: AnnouncerReport[];
  /** Why the report could not be read. */
  reportError: string | undefined;
  vipsServed: number;
  /** What the host's report left out at its size limit (`host_report_limits.ts`), if anything. */
  omitted: Omitted | undefined;
  /** BGP sessions (BIRD hosts): peer, Established, prefixes exported; undefined without BIRD. */
  bgp: { peer: string; established: boolean; routes: number }[] | undefined;
  /** True when the host reports BGP sessions and none is Established. */
  bgpDown: boolean;
  /** The inventory in force on the host (digest, since by its clock); undefined when unreported. */
  inventory: { sha256: string; since: string } | undefined;
  /** True when the host runs another inventory than the reference (`ClusterStatus.inventory`). */
  otherInventory: boolean;
}

/** A LoadBalancer Service still waiting for an address. */
export interface PendingService {
  /** `namespace/name`. */
  service: string;
  /** Its `spec.loadBalancerClass`; undefined when unset. */
  loadBalancerClass: string | undefined;
}

/** A heartbeat left by a retired host: it counts for nothing; delete it with `cleanup`. */
export interface RetiredHostStatus {
  host: string;
  /** The last renewal time the host wrote (ISO), by its own clock. */
  lastHeartbeat: string | undefined;
  /** Milliseconds this reader saw it unchanged (at least; since its last renewal if seen). */
  ageMs: number;
  /** The command that deletes the Lease. */
  cleanup: string;
}

/** One pool and family. */
export interface PoolStatus {
  pool: string;
  family: string;
  total: number;
  used: number;
  full: boolean;
}

/** One machine's power, as the host polling its BMC (the leader) published it. */
export interface PowerStatus {
  machine: string;
  state: "on" | "off" | "unknown";
  /** When the host first saw this state (ISO, by this reader's clock, as `VipStatus.since`). */
  since: string | undefined;
  /** When the BMC last gave a valid answer (ISO, by this reader's clock); undefined when never. */
  answered: string | undefined;
  /** What was seen (the PowerState, or why there was no answer). */
  detail: string;
}

/** The leader, from its Lease. */
export interface LeaderStatus {
  identity: string | undefined;
  /** The renewal time the leader wrote (ISO), by its own clock: its claim, never judged. */
  renewTime: string | undefined;
  /** fresh (seen renewed within its duration), silent, or unconfirmed (not watched long enough). */
  freshness: Freshness;
  /** As `HostStatus.ageMs`; undefined without a Lease. */
  ageMs: number | undefined;
  /** Whether this reader saw the Lease renewed. */
  renewalSeen: boolean;
  /** True when this reader saw the Lease unchanged for longer than its duration (nobody leads). */
  expired: boolean;
}

/** Everything `keelson status` shows. */
export interface ClusterStatus {
  now: string;
  /**
   * Whose observation judged the heartbeats: the leader's published judgement (`seq`, at most
   * `ageMs` old by this reader's clock), or this reader's own watch (`observedMs`).
   */
  judgedBy: { by: "leader"; seq: number; ageMs: number } | { by: "reader" };
  /** How long this reader watched the Leases for renewals (ms) before judging them. */
  observedMs: number;
  leader: LeaderStatus;
  vips: VipStatus[];
  hosts: HostStatus[];
  /** Heartbeats of retired hosts (silent, not in the inventory); empty without an inventory. */
  retired: RetiredHostStatus[];
  /** Whether the inventory was known (only then can a heartbeat be told retired). */
  inventoryKnown: boolean;
  pools: PoolStatus[];
  /**
   * Machines' power from the leader's heartbeat only (only the leader polls the BMCs; another
   * host's report is a former leader's, however recent), when it is fresh; sorted.
   */
  power: PowerStatus[];
  /** The leader's host, whose heartbeat `power` comes from; undefined when none is shown. */
  powerFrom: string | undefined;
  /**
   * Whether the hosts run one inventory: the reference digest (the leader's, else most hosts'),
   * the hosts on another, those that report none (older versions).
   */
  inventory: {
    reference: InventoryAgreement["reference"];
    others: OtherInventory[];
    unreported: string[];
    /** The `--config` file's digest, when given, and whether it is the reference. */
    file: { sha256: string; matches: boolean | undefined } | undefined;
  };
  /** LoadBalancer Services without an address yet, sorted. */
  pending: PendingService[];
  /**
   * Each pool's serving hosts and whether each can serve now (`pool_servers.ts`); empty without
   * the inventory.
   */
  servingHosts: PoolServers[];
  /** One sentence per problem; empty when healthy. */
  problems: string[];
}

/** The model before its problems are decided: every row, every VIP's `problem` unset. */
export type StatusModel = Omit<ClusterStatus, "problems">;

/** What a VIP row's problem is. */
export type VipProblem = NonNullable<VipStatus["problem"]>;
