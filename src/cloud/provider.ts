/**
 * The provider contract: the TypeScript form of k8s.io/cloud-provider's `cloudprovider.Interface`.
 *
 * Controllers see only this file. A provider implements the capabilities it has and leaves the
 * others `undefined`, so "is it supported?" is a property check, as upstream's `(x, ok)` pair.
 *
 * @module
 */
import type { HostDataPlane } from "./host_data_plane.ts";
import type { AllocationPlan, PlannedCluster, PodRoutePlan } from "./cluster_plan.ts";
import type {
  HostFileRequest,
  HostFileResult,
  HostReadersRequest,
  StagedApplyOutcome,
  StagedApplyRequest,
} from "./host_file.ts";
import type { ConfigIssue } from "../config/config_error.ts";
import type { Config } from "../config/types.ts";
import type {
  V1EndpointSlice,
  V1LoadBalancerStatus,
  V1Node,
  V1NodeAddress,
  V1Service,
} from "@kubernetes/client-node";
import type { EventRecorder, Informer, Lister } from "../kube/ports.ts";
import type { HeartbeatSource } from "../status/heartbeats.ts";

/** What a provider learns about one machine, as upstream's `InstanceMetadata`. */
export interface InstanceMetadata {
  /** `<scheme>://<id>`; stable for the life of the machine. */
  providerID: string;
  /** Written to `node.kubernetes.io/instance-type` (and the beta twin); empty = not set. */
  instanceType: string;
  /** The Node's addresses: InternalIP, ExternalIP, Hostname. */
  nodeAddresses: V1NodeAddress[];
  /** Written to `topology.kubernetes.io/zone`; empty = not set. */
  zone: string;
  /** Written to `topology.kubernetes.io/region`; empty = not set. */
  region: string;
  /** Extra labels; `kubernetes.io`/`k8s.io` keys are dropped and existing labels are kept. */
  additionalLabels: Record<string, string>;
}

/**
 * Where a machine stands in the provider's inventory. `absent` means the provider knows its whole
 * inventory and the machine is not in it; an inventory that cannot be read is an error instead.
 */
export type MachineState = "active" | "maintenance" | "shutdown" | "retired" | "absent";

/** Upstream `InstancesV2`, plus Keelson's machine state. */
export interface InstancesV2 {
  /** True when the machine behind the Node exists. Throws when it cannot tell. */
  instanceExists(node: V1Node): Promise<boolean>;
  /** True when the machine is shut down. Throws when it cannot tell. */
  instanceShutdown(node: V1Node): Promise<boolean>;
  /** The machine's metadata, or `null` when the provider has nothing to say about it. */
  instanceMetadata(node: V1Node): Promise<InstanceMetadata | null>;
  /** Keelson extension: the machine's state (maintenance and retirement have no upstream twin). */
  instanceState?(node: V1Node): Promise<MachineState>;
}

/** Upstream `Zones` (legacy; InstancesV2 carries zone and region). */
export interface Zones {
  /** Zone and region of the Node's machine. */
  getZoneByNodeName(nodeName: string): Promise<{ zone: string; region: string }>;
}

/** What `ensureLoadBalancer` returns: upstream's status, plus what to record on the Service. */
export interface EnsuredLoadBalancer extends V1LoadBalancerStatus {
  /**
   * Keelson extension: annotations the provider records on the Service (e.g. the pool an address
   * came from). Written together with the status, in the same request; absent = none.
   */
  serviceAnnotations?: Record<string, string>;
}

/** Upstream `LoadBalancer`. */
export interface LoadBalancer {
  /**
   * Keelson extension: the annotation keys this provider writes as `serviceAnnotations`. They are
   * its record of what it did, never a request: a change of them alone is no reason to ensure the
   * Service again. @default none
   */
  readonly recordAnnotations?: readonly string[];
  /** The LB's status and whether it exists. */
  getLoadBalancer(
    clusterName: string,
    service: V1Service,
  ): Promise<{ status: V1LoadBalancerStatus; exists: boolean }>;
  /** A stable name for the Service's LB. */
  getLoadBalancerName(clusterName: string, service: V1Service): string;
  /**
   * Creates or converges the LB; returns the status to write. The service controller writes that
   * status, its cleanup finalizer and `serviceAnnotations` in one request after this returns, so
   * whatever a provider holds outside the Service's status must be released again by
   * `ensureLoadBalancerDeleted` (the controller calls it for a Service that vanished meanwhile).
   */
  ensureLoadBalancer(
    clusterName: string,
    service: V1Service,
    nodes: V1Node[],
  ): Promise<EnsuredLoadBalancer>;
  /** Converges the LB's backends. */
  updateLoadBalancer(clusterName: string, service: V1Service, nodes: V1Node[]): Promise<void>;
  /** Removes the LB; succeeds when it is already gone. */
  ensureLoadBalancerDeleted(clusterName: string, service: V1Service): Promise<void>;
  /**
   * Keelson extension: the Node names of the hosts that serve these addresses (where their
   * traffic lands). Absent: the control-plane Nodes are taken to serve every address.
   */
  servingHosts?(addresses: readonly string[]): string[];
}

/** One pod-CIDR route, as upstream's `Route`. */
export interface Route {
  name: string;
  targetNode: string;
  destinationCIDR: string;
  blackhole?: boolean;
}

/** Upstream `Routes`. */
export interface Routes {
  listRoutes(clusterName: string): Promise<Route[]>;
  createRoute(clusterName: string, nameHint: string, route: Route): Promise<void>;
  deleteRoute(clusterName: string, route: Route): Promise<void>;
}

/** Usage of one address pool and family (Keelson extension). */
export interface PoolUsage {
  pool: string;
  family: "IPv4" | "IPv6";
  /** Usable addresses (an IPv6 pool's count may exceed 2^53 and is then approximate). */
  total: number;
  /** Addresses Services hold. */
  used: number;
}

/**
 * A machine's power as this process last observed it from the machine's power controller (e.g. its
 * BMC over Redfish). Keelson extension: upstream has no power contract.
 */
export interface PowerObservation {
  /**
   * `on` or `off` only when the power controller answered exactly that; `unknown` when it could
   * not be reached, timed out, refused the credentials or answered anything else — never `off`.
   */
  state: "on" | "off" | "unknown";
  /** When this process first saw the current state, by its own clock (ms since the epoch). */
  sinceMs: number;
  /** When this process last got a valid answer, by its own clock; undefined when never. */
  answeredAtMs?: number;
  /** What was seen, for Events and `keelson status` (e.g. `PowerState "Off"`, the error). */
  detail: string;
}

/** Power truth and power actions for machines (Keelson extension). */
export interface PowerControl {
  /**
   * The power of the Node's machine as last observed; `null` when the machine has no power
   * controller configured (the inventory's `state` is then the only truth).
   */
  powerState(node: V1Node): Promise<PowerObservation | null>;
  /**
   * Forces the Node's machine off (Redfish `ComputerSystem.Reset` with `ForceOff`).
   * @throws {ProviderError} when the machine has no power controller or the action failed
   */
  forceOff(node: V1Node): Promise<void>;
  /**
   * Tells `listener` each time a machine's observed power changes in a way a decision can read
   * (its state, whether it answers, its Off being confirmed), so a controller need not poll.
   * @param listener told which Nodes the change concerns (a Node's machine is the provider's
   *   to find)
   * @returns stops telling
   */
  onChange(listener: (change: PowerChange) => void): () => void;
}

/** One change of a machine's observed power. */
export interface PowerChange {
  /**
   * Whether the change concerns this Node's machine.
   * @param node a Node from the cache
   */
  concerns(node: V1Node): boolean;
}

/** One machine's power as this process observes it (for this host's heartbeat). */
export interface MachinePower {
  /** The machine's inventory name. */
  machine: string;
  observation: PowerObservation;
}

/** Upstream `Clusters`. */
export interface Clusters {
  listClusters(): Promise<string[]>;
  master(clusterName: string): Promise<string>;
}

/**
 * What `startHost` hands a provider: this host and the process's stop signal. The host side runs
 * on every host, leader or not, from start-up on, before any Kubernetes connection exists (the
 * control-plane VIP must come up before the cluster it fronts).
 */
export interface HostContext {
  /** This host's machine name. */
  host: string;
  /** Stops the host side's loops. */
  signal: AbortSignal;
}

/** The provider's running host side (e.g. keepalived, BIRD). */
export interface RunningHostSide {
  /** Resolves when every loop of the host side has stopped. */
  readonly finished: Promise<void>;
  /**
   * Resolves, with what happened, when a loop of the host side stopped before the stop signal
   * (keepalived or BIRD would no longer be updated); never resolves otherwise.
   */
  readonly stopped?: Promise<Error>;
  /** This host's data plane, when the host side announces anything (Keelson extension). */
  readonly dataPlane?: HostDataPlane;
}

/**
 * What `connect` hands a provider once the Kubernetes connection exists, on every host: the
 * caches (they may not have synced yet), read-only. A provider writes nothing itself: what it
 * records on a Service goes back through `ensureLoadBalancer` (`serviceAnnotations`).
 */
export interface ClusterContext {
  nodes: Informer<V1Node>;
  services: Informer<V1Service>;
  /** Where Services' endpoints run (e.g. for `externalTrafficPolicy: Local`). */
  endpointSlices?: Informer<V1EndpointSlice>;
  /** Records Events from this host (every host, not only the leader). */
  events?: EventRecorder;
  /** Aborts when the process stops. */
  signal: AbortSignal;
}

/** What `initialize` hands a provider: read-only views of the cluster, as upstream's client builder. */
export interface ProviderContext {
  nodes: Lister<V1Node>;
  services: Lister<V1Service>;
  /**
   * Every host's heartbeat (`kube-system/keelson-host-*`), read-only and judged by this process's
   * observation of each Lease (never by the writer's clock); Keelson extension.
   */
  heartbeats?: HeartbeatSource;
  /** Records Events on the Services the provider serves; absent when the service controller is off. */
  events?: EventRecorder;
  /** Aborts when this term of leadership ends. */
  signal: AbortSignal;
}

/** What a provider would do to a cluster snapshot (`keelson plan`; Keelson extension). */
export interface ClusterPlan {
  /** InstancesV2 answering with the snapshot's Nodes as the Nodes that exist. */
  instances: InstancesV2;
  /** The LoadBalancer Services' addresses. */
  allocations: AllocationPlan;
  /** The pod routes, when the provider would route pod CIDRs (it has Routes). */
  podRoutes?: PodRoutePlan;
}

/**
 * A cloud provider. Each capability is optional; absent means unsupported.
 *
 * Lifecycle hooks, in the order the agent calls them: `startHost` (every host, at start-up),
 * `connect` (every host, once the Kubernetes connection exists), `initialize` (the leader, once
 * the caches synced, before the controllers run); `reconfigure` after every accepted reload.
 */
export interface CloudProvider {
  /** The providerID scheme and registry name, e.g. `baremetal`. */
  readonly providerName: string;
  /** Whether the provider has a cluster ID (upstream `HasClusterID`). */
  hasClusterID(): boolean;
  /** Starts what the provider runs on every host (announcers); Keelson extension. */
  startHost?(context: HostContext): Promise<RunningHostSide>;
  /** The Kubernetes connection exists (every host); Keelson extension. */
  connect?(context: ClusterContext): void;
  /** A configuration reload was accepted (every host); Keelson extension. */
  reconfigure?(reason: string): Promise<void>;
  /**
   * What rejects a reload, judged against the configuration in force and what the provider sees
   * of the cluster (e.g. addresses Services hold that the new file no longer offers). Keelson
   * extension.
   * @param next the reloaded configuration (validated, flags applied)
   * @param inForce the configuration in force
   * @param file the configuration file, named in the issues
   * @param services the Services to judge by (`keelson plan`'s); default: what the provider's
   *   connected caches hold, once synced
   * @returns the issues; none accepts the reload
   */
  validateReload?(
    next: Config,
    inForce: Config,
    file: string,
    services?: readonly V1Service[],
  ): ConfigIssue[];
  /**
   * One host's file of one of the provider's announcers, rendered offline (`keelson render`).
   * Keelson extension.
   */
  renderHostFile?(request: HostFileRequest): Promise<HostFileResult>;
  /**
   * As root (`keelson apply-host-config`): installs the host files the unprivileged agent staged,
   * each only when it is exactly what the provider renders from the inventory. Keelson extension.
   */
  applyStagedHostFiles?(request: StagedApplyRequest): Promise<StagedApplyOutcome[]>;
  /**
   * As root (`keelson apply-host-config --watch`): serves the unprivileged agent what it may read
   * of the daemons but cannot reach itself (the bare-metal provider: BIRD's sessions, over a
   * read-only socket), until `signal` aborts. Called after every inventory read; starts only what
   * is not served yet. Keelson extension.
   * @returns what is served (each ends once `signal` aborts)
   */
  serveHostReaders?(request: HostReadersRequest): Promise<void>[];
  /** What the provider would do to a cluster snapshot, offline (`keelson plan`). Keelson extension. */
  planCluster?(cluster: PlannedCluster): ClusterPlan;
  /**
   * Usage of each address pool and family as this host computes it, sorted by pool then family;
   * for this host's heartbeat. Keelson extension.
   */
  poolUsage?(): PoolUsage[];
  /**
   * Each machine's power as this process observes it (only while it polls: the leader), sorted
   * by machine; for this host's heartbeat and `keelson status`. Keelson extension.
   */
  machinePower?(): MachinePower[];
  /** Called once each time this process starts leading, before controllers run. */
  initialize?(context: ProviderContext): Promise<void>;
  readonly instancesV2?: InstancesV2;
  readonly zones?: Zones;
  readonly loadBalancer?: LoadBalancer;
  readonly routes?: Routes;
  readonly clusters?: Clusters;
  /** Machine power from the machines' power controllers (Keelson extension). */
  readonly power?: PowerControl;
}

/**
 * An error a provider raises when it cannot answer; `retriable` says whether a retry may help,
 * `reason` (when set) is a machine-readable cause such as `PoolExhausted`, which controllers put
 * into Events without knowing the provider.
 */
export class ProviderError extends Error {
  /** Whether retrying later may succeed. */
  readonly retriable: boolean;
  /** Machine-readable reason (CamelCase), e.g. `PoolExhausted`; undefined when none applies. */
  readonly reason: string | undefined;
  /**
   * @param message what failed, with the object named
   * @param options `retriable` (default true), `reason` and the `cause`
   */
  constructor(
    message: string,
    options: { retriable?: boolean; reason?: string; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = "ProviderError";
    this.retriable = options.retriable ?? true;
    this.reason = options.reason;
  }
}

/**
 * The provider knows its whole inventory and no machine matches the Node (upstream
 * `InstanceNotFound`). Controllers keep the Node tainted and say what was tried.
 */
export class InstanceNotFoundError extends ProviderError {
  /** What the lookup tried, e.g. `providerID "baremetal://x", name "n1", IPs 10.0.0.5`. */
  readonly tried: string;
  /**
   * @param message what was looked up, naming the Node
   * @param tried what the lookup tried, for events
   */
  constructor(message: string, tried: string) {
    super(message, { retriable: true });
    this.name = "InstanceNotFoundError";
    this.tried = tried;
  }
}
