/**
 * Every controller the leader runs, in one table: its name (what `--controllers` enables, the
 * `name` label of `running_managed_controllers`, and through `CANONICAL_NAMES` its health check
 * and log name), the provider capability it needs, its work queues, and how it is built for a
 * term of leadership. `runLeaderControllers` starts the rows `--controllers` enables, in order.
 *
 * @module
 */
import type { V1Lease } from "@kubernetes/client-node";
import type { Registry } from "prom-client";
import type { CloudProvider } from "../cloud/provider.ts";
import { handlesService } from "../cloud/load_balancer_class.ts";
import type { Config } from "../config/types.ts";
import type { ControllerName } from "../config/controller_names.ts";
import { NODE_QUEUE_NAME, NodeController } from "../controllers/node/node_controller.ts";
import type { DeletionGuard } from "../controllers/node_lifecycle/deletion_guards.ts";
import type { ActionLedger } from "../controllers/action_ledger/action_ledger.ts";
import {
  NodeLifecycleController,
  policyFromConfig,
} from "../controllers/node_lifecycle/node_lifecycle_controller.ts";
import {
  PV_LABELS_QUEUE_NAME,
  PvLabelsController,
} from "../controllers/pv_labels/pv_labels_controller.ts";
import {
  ROUTE_CONTROLLER_EVENT_COMPONENT,
  RouteController,
} from "../controllers/route/route_controller.ts";
import {
  SERVICE_CONTROLLER_EVENT_COMPONENT,
  SERVICE_NODES_QUEUE_NAME,
  SERVICE_QUEUE_NAME,
  ServiceController,
} from "../controllers/service/service_controller.ts";
import {
  OUT_OF_SERVICE_EVENT_COMPONENT,
  OUT_OF_SERVICE_QUEUE_NAME,
  OutOfServiceController,
  powerPolicyFromConfig,
} from "../controllers/out_of_service/out_of_service_controller.ts";
import { VipHostController } from "../controllers/vip_hosts/vip_host_controller.ts";
import { CLIENT_NAMES } from "../kube/client_factory.ts";
import type { ClusterWriter, EventRecorder, Informer } from "../kube/ports.ts";
import type { NodePods } from "../kube/node_pods.ts";
import type { RecordObserver } from "../status/observed_freshness.ts";
import { inventoryHosts } from "../status/retired_heartbeats.ts";
import type { ClusterCaches } from "./cluster_caches.ts";
import { createEndpointLocator } from "./endpoint_locator.ts";

/** What every controller of one term of leadership is built from. */
export interface LeaderTerm {
  /** The configuration at the start of the term (start-only settings: workers, periods). */
  config: Config;
  /** The configuration in force (reloads apply at once). */
  live: () => Config;
  caches: ClusterCaches;
  /** Every host's heartbeat Lease (run for the term) and this term's memory of their changes. */
  heartbeats: { leases: Informer<V1Lease>; observer: RecordObserver };
  /** The kubelets' node Leases, run for the term while the out-of-service controller runs. */
  kubeletLeases?: Informer<V1Lease>;
  provider: CloudProvider;
  registry: Registry;
  guard: DeletionGuard;
  /** This term's record of destructive actions (on the leader Lease), which their caps count. */
  ledger: ActionLedger;
  /** This host's machine name (`--host`). */
  host: string;
  /** A writer on the named client (each controller has its own rate limit). */
  writer(client: string): ClusterWriter;
  /** The Pods of a Node, listed and force-deleted on the named client. */
  nodePods(client: string): NodePods;
  /** Events under `component` on the named client, flushed when the term ends. */
  events(component: string, client: string): EventRecorder;
  /** The provider's Warning Events on Services; the service controller records its own there. */
  serviceEvents?: EventRecorder;
  /** Told about the running service controller (undefined once it stopped), for reloads. */
  onServiceController?: (running: ServiceController | undefined) => void;
}

/** A controller built for a term. */
export interface RunnableController {
  /** Runs until `signal` aborts. */
  run(signal: AbortSignal): Promise<void>;
}

/** A provider capability a controller needs (upstream skips a controller whose interface is missing). */
export interface ProviderNeed {
  capability: "instancesV2" | "loadBalancer" | "routes" | "power";
  /** Upstream's interface name, for the log. */
  interfaceName: string;
  /** What would give the provider the capability, for the log. @default nothing more */
  hint?: string;
}

/** One row of the table. */
export interface ControllerEntry {
  /** Short name (`--controllers`, `running_managed_controllers`); health check `CANONICAL_NAMES`. */
  name: ControllerName;
  /** The provider capability it needs. @default none */
  needs?: ProviderNeed;
  /** Its work queues: the `name` label of the workqueue metrics, declared at start. */
  queues: readonly string[];
  /** Builds it for one term. */
  create(term: LeaderTerm, signal: AbortSignal): RunnableController;
}

/** The controllers, in the order they start. */
export const CONTROLLER_TABLE: readonly ControllerEntry[] = [
  {
    name: "cloud-node",
    needs: { capability: "instancesV2", interfaceName: "InstancesV2" },
    queues: [NODE_QUEUE_NAME],
    create: (term) =>
      new NodeController({
        nodes: term.caches.nodes,
        writer: term.writer(CLIENT_NAMES.cloudNode),
        events: term.events("cloud-node-controller", CLIENT_NAMES.cloudNode),
        instances: term.provider.instancesV2!,
        registry: term.registry,
      }, {
        workers: term.config.controllers.concurrent_node_syncs,
        statusUpdateFrequencyMs: term.config.controllers.node_status_update_frequency.ms,
      }),
  },
  {
    name: "cloud-node-lifecycle",
    needs: { capability: "instancesV2", interfaceName: "InstancesV2" },
    queues: [],
    create: (term) =>
      new NodeLifecycleController({
        nodes: term.caches.nodes,
        writer: term.writer(CLIENT_NAMES.cloudNodeLifecycle),
        events: term.events("cloud-node-lifecycle-controller", CLIENT_NAMES.cloudNodeLifecycle),
        instances: term.provider.instancesV2!,
        registry: term.registry,
        guard: term.guard,
        ledger: term.ledger,
      }, {
        monitorPeriodMs: term.config.controllers.node_monitor_period.ms,
        policy: () => policyFromConfig(term.live()),
      }),
  },
  {
    name: "service",
    needs: { capability: "loadBalancer", interfaceName: "LoadBalancer" },
    queues: [SERVICE_QUEUE_NAME, SERVICE_NODES_QUEUE_NAME],
    create: (term, signal) => {
      const controller = new ServiceController({
        services: term.caches.services,
        nodes: term.caches.nodes,
        writer: term.writer(CLIENT_NAMES.service),
        events: term.serviceEvents ??
          term.events(SERVICE_CONTROLLER_EVENT_COMPONENT, CLIENT_NAMES.service),
        loadBalancer: term.provider.loadBalancer!,
        registry: term.registry,
        endpoints: createEndpointLocator(
          term.caches.endpointSlices,
          term.caches.nodes,
          term.live,
          term.provider.loadBalancer!.servingHosts?.bind(term.provider.loadBalancer),
        ),
      }, {
        clusterName: term.config.cluster.name,
        workers: term.config.controllers.concurrent_service_syncs,
        handles: (service) => handlesService(term.live(), service),
      });
      // the Local-policy warning is decided at ensure time: re-check when endpoints move
      const unsubscribe = term.caches.endpointSlices.subscribe((event) => {
        const ns = event.object.metadata?.namespace;
        const svc = event.object.metadata?.labels?.["kubernetes.io/service-name"];
        if (ns && svc) controller.requeue(`${ns}/${svc}`);
      });
      signal.addEventListener("abort", unsubscribe, { once: true });
      term.onServiceController?.(controller);
      return {
        run: (stop) => controller.run(stop).finally(() => term.onServiceController?.(undefined)),
      };
    },
  },
  {
    name: "route",
    needs: {
      capability: "routes",
      interfaceName: "Routes",
      hint: "no [[bgp.peers]] entry with pod_cidrs = true",
    },
    queues: [],
    create: (term) =>
      new RouteController({
        nodes: term.caches.nodes,
        routes: term.provider.routes!,
        writer: term.writer(CLIENT_NAMES.route),
        events: term.events(ROUTE_CONTROLLER_EVENT_COMPONENT, CLIENT_NAMES.route),
        registry: term.registry,
      }, {
        clusterName: term.config.cluster.name,
        periodMs: term.config.controllers.route_reconciliation_period.ms,
      }),
  },
  {
    name: "pv-labels",
    queues: [PV_LABELS_QUEUE_NAME],
    create: (term) =>
      new PvLabelsController({
        volumes: term.caches.volumes,
        nodes: term.caches.nodes,
        writer: term.writer(CLIENT_NAMES.pvLabels),
        registry: term.registry,
      }),
  },
  {
    name: "vip-host",
    queues: [],
    create: (term) =>
      new VipHostController({
        services: term.caches.services,
        leases: term.heartbeats.leases,
        events: term.events("keelson-vip-hosts", CLIENT_NAMES.vipHosts),
        handles: (s) => handlesService(term.live(), s),
        registry: term.registry,
        inventory: () => inventoryOf(term.live()),
        observer: term.heartbeats.observer,
        host: term.host,
        controlPlaneVips: () => term.live().control_plane.vip,
      }),
  },
  {
    name: "out-of-service",
    needs: { capability: "power", interfaceName: "PowerControl" },
    queues: [OUT_OF_SERVICE_QUEUE_NAME],
    create: (term) =>
      new OutOfServiceController({
        nodes: term.caches.nodes,
        writer: term.writer(CLIENT_NAMES.outOfService),
        events: term.events(OUT_OF_SERVICE_EVENT_COMPONENT, CLIENT_NAMES.outOfService),
        power: term.provider.power!,
        registry: term.registry,
        guard: term.guard,
        host: term.host,
        ledger: term.ledger,
        ...(term.kubeletLeases ? { kubeletLeases: term.kubeletLeases } : {}),
        pods: term.nodePods(CLIENT_NAMES.outOfService),
      }, { policy: () => powerPolicyFromConfig(term.live()) }),
  },
];

/**
 * Whether the provider has what a controller needs.
 * @param entry the table row
 * @param provider the provider's capabilities
 * @returns true when it can start
 */
export function providerCanRun(
  entry: ControllerEntry,
  provider: Pick<CloudProvider, "instancesV2" | "loadBalancer" | "routes" | "power">,
): boolean {
  return !entry.needs || provider[entry.needs.capability] !== undefined;
}

// the inventory's hosts, once per configuration (a reload brings a new object)
const INVENTORIES = new WeakMap<Config, Set<string>>();

function inventoryOf(config: Config): Set<string> {
  let hosts = INVENTORIES.get(config);
  if (!hosts) {
    hosts = inventoryHosts(config.machines);
    INVENTORIES.set(config, hosts);
  }
  return hosts;
}
