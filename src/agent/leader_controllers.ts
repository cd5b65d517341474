/**
 * Leading: initializes the provider, starts the controllers that write to the API (leader only)
 * and stops them when the leader signal aborts. Each started controller gets a health check under
 * its upstream name and a `running_managed_controllers` series that is 1 while it runs.
 *
 * @module
 */
import { Gauge, type Registry } from "prom-client";
import type { CloudProvider } from "../cloud/provider.ts";
import type { Config } from "../config/types.ts";
import {
  CANONICAL_NAMES,
  type ControllerName,
  resolveControllers,
} from "../config/controller_names.ts";
import { NODE_QUEUE_NAME, NodeController } from "../controllers/node/node_controller.ts";
import type { DeletionGuard } from "../controllers/node_lifecycle/deletion_guards.ts";
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
import { handlesService } from "../cloud/load_balancer_class.ts";
import {
  SERVICE_CONTROLLER_EVENT_COMPONENT,
  SERVICE_NODES_QUEUE_NAME,
  SERVICE_QUEUE_NAME,
  ServiceController,
} from "../controllers/service/service_controller.ts";
import { CLIENT_NAMES, type ClientFactory } from "../kube/client_factory.ts";
import { createClusterWriter, createEventSink } from "../kube/cluster_writer.ts";
import { AggregatingEventRecorder } from "../kube/event_recorder.ts";
import type { HeartbeatSource } from "../status/heartbeats.ts";
import { logger } from "../log/logging.ts";
import { declareOnce } from "../metrics/registry.ts";
import { hostname } from "../net/hostname.ts";
import type { HealthChecks } from "../server/health_checks.ts";
import type { ClusterCaches } from "./cluster_caches.ts";
import { createEndpointLocator } from "./endpoint_locator.ts";

/** What the controllers are built from. */
export interface LeaderControllerDeps {
  config: () => Config;
  /** One client (and rate limit) per controller, its Events included, as upstream. */
  clients: ClientFactory;
  caches: ClusterCaches;
  /**
   * Every host's heartbeat (its Lease cache run by the VIP-host controller, judged by the same
   * observer), for the provider's Routes.
   */
  heartbeats?: HeartbeatSource;
  provider: CloudProvider;
  registry: Registry;
  health: HealthChecks;
  guard: DeletionGuard;
  /** Called with the running service controller (undefined when it stops), for reloads. */
  onServiceController?: (running: ServiceController | undefined) => void;
}

const MANAGED_CONTROLLERS_METRIC = "running_managed_controllers";

/**
 * The gauge of controllers this process runs, as upstream controller managers export it.
 * @param registry the process's registry
 * @returns the gauge (declared once per registry)
 */
export function managedControllersGauge(registry: Registry): Gauge<"name" | "manager"> {
  return declareOnce(registry, MANAGED_CONTROLLERS_METRIC, () =>
    new Gauge({
      name: MANAGED_CONTROLLERS_METRIC,
      help: "Controllers this process runs (1 while running), as upstream controller managers.",
      labelNames: ["name", "manager"],
      registers: [registry],
    }));
}

/** The work queues each controller runs: the `name` label of its workqueue metrics. */
export const CONTROLLER_QUEUES: Readonly<Record<ControllerName, readonly string[]>> = {
  "cloud-node": [NODE_QUEUE_NAME],
  "cloud-node-lifecycle": [],
  "service": [SERVICE_QUEUE_NAME, SERVICE_NODES_QUEUE_NAME],
  "route": [],
  "pv-labels": [PV_LABELS_QUEUE_NAME],
};

/**
 * The controllers `runLeaderControllers` starts under `config`: the enabled ones whose capability
 * the provider has (upstream skips a controller whose cloud interface is missing).
 * @param config the configuration in force
 * @param provider the provider's capabilities
 * @returns the controllers it starts when leading
 */
export function startableControllers(
  config: Config,
  provider: Pick<CloudProvider, "instancesV2" | "loadBalancer" | "routes">,
): Set<ControllerName> {
  const resolved = resolveControllers(config.controllers.enabled);
  const enabled = "enabled" in resolved ? resolved.enabled : new Set<ControllerName>();
  const available: Record<ControllerName, boolean> = {
    "cloud-node": provider.instancesV2 !== undefined,
    "cloud-node-lifecycle": provider.instancesV2 !== undefined,
    "service": provider.loadBalancer !== undefined,
    "route": provider.routes !== undefined,
    "pv-labels": true,
  };
  return new Set([...enabled].filter((name) => available[name]));
}

/**
 * Initializes the provider, then runs the enabled controllers until `signal` aborts.
 * @param deps caches, clients, provider, metrics and health registries
 * @param signal aborts when leadership is lost or the process stops
 * @returns when every controller has stopped
 */
export async function runLeaderControllers(
  deps: LeaderControllerDeps,
  signal: AbortSignal,
): Promise<void> {
  const log = logger("agent");
  const config = deps.config();
  const resolved = resolveControllers(config.controllers.enabled);
  const enabled = "enabled" in resolved ? resolved.enabled : new Set<ControllerName>();
  const host = hostname() ?? "";
  const recorders: AggregatingEventRecorder[] = [];
  const clientOf = (name: string) => deps.clients.client(name);
  /** An event recorder for `component` on the controller's client, flushed when leading ends. */
  const recorder = (component: string, client: string) => {
    const sink = createEventSink(clientOf(client));
    const events = new AggregatingEventRecorder(sink, { component, host });
    recorders.push(events);
    return events;
  };
  /** What a controller writes through: its own client and its Events under `component`. */
  const writesOf = (component: string, client: string) => ({
    writer: createClusterWriter(clientOf(client)),
    events: recorder(component, client),
  });
  const runs: Promise<void>[] = [];
  const managed = managedControllersGauge(deps.registry);

  const start = (name: ControllerName, run: () => Promise<void>) => {
    const check = CANONICAL_NAMES[name];
    deps.health.add(check, () => ({ ok: true }));
    managed.set({ name, manager: "keelson" }, 1);
    log.info("Starting controller {name}", { name: check });
    runs.push(
      run().catch((error) => {
        log.error("Controller {name} stopped with an error: {error}", {
          name: check,
          error: String(error),
        });
      }).finally(() => {
        deps.health.remove(check);
        managed.set({ name, manager: "keelson" }, 0);
      }),
    );
  };

  // the provider's Warning events on Services (addresses no pool offers) are the service
  // controller's: recorded under its component, and only while it runs
  const providerEvents = enabled.has("service") && deps.provider.loadBalancer
    ? recorder(SERVICE_CONTROLLER_EVENT_COMPONENT, CLIENT_NAMES.service)
    : undefined;
  await deps.provider.initialize?.({
    nodes: deps.caches.nodes,
    services: deps.caches.services,
    ...(deps.heartbeats ? { heartbeats: deps.heartbeats } : {}),
    ...(providerEvents ? { events: providerEvents } : {}),
    signal,
  });

  const instances = deps.provider.instancesV2;
  for (const name of ["cloud-node", "cloud-node-lifecycle"] as const) {
    if (enabled.has(name) && !instances) {
      log.warn("Not starting {name}: provider {provider} has no InstancesV2", {
        name: CANONICAL_NAMES[name],
        provider: deps.provider.providerName,
      });
    }
  }
  if (enabled.has("cloud-node") && instances) {
    const controller = new NodeController({
      nodes: deps.caches.nodes,
      ...writesOf("cloud-node-controller", CLIENT_NAMES.cloudNode),
      instances,
      registry: deps.registry,
    }, {
      workers: config.controllers.concurrent_node_syncs,
      statusUpdateFrequencyMs: config.controllers.node_status_update_frequency.ms,
    });
    start("cloud-node", () => controller.run(signal));
  }
  if (enabled.has("cloud-node-lifecycle") && instances) {
    const controller = new NodeLifecycleController({
      nodes: deps.caches.nodes,
      ...writesOf("cloud-node-lifecycle-controller", CLIENT_NAMES.cloudNodeLifecycle),
      instances,
      registry: deps.registry,
      guard: deps.guard,
    }, {
      monitorPeriodMs: config.controllers.node_monitor_period.ms,
      policy: () => policyFromConfig(deps.config()),
    });
    start("cloud-node-lifecycle", () => controller.run(signal));
  }
  const loadBalancer = deps.provider.loadBalancer;
  if (enabled.has("service") && !loadBalancer) {
    log.warn("Not starting service-lb-controller: provider {provider} has no LoadBalancer", {
      provider: deps.provider.providerName,
    });
  }
  if (enabled.has("service") && loadBalancer) {
    const controller = new ServiceController({
      services: deps.caches.services,
      nodes: deps.caches.nodes,
      writer: createClusterWriter(clientOf(CLIENT_NAMES.service)),
      events: providerEvents ?? recorder(SERVICE_CONTROLLER_EVENT_COMPONENT, CLIENT_NAMES.service),
      loadBalancer,
      registry: deps.registry,
      endpoints: createEndpointLocator(deps.caches.endpointSlices, deps.caches.nodes, deps.config),
    }, {
      clusterName: config.cluster.name,
      workers: config.controllers.concurrent_service_syncs,
      handles: (service) => handlesService(deps.config(), service),
    });
    // the Local-policy warning is decided at ensure time: re-check when endpoints move
    const unsubscribe = deps.caches.endpointSlices.subscribe((event) => {
      const ns = event.object.metadata?.namespace;
      const svc = event.object.metadata?.labels?.["kubernetes.io/service-name"];
      if (ns && svc) controller.requeue(`${ns}/${svc}`);
    });
    signal.addEventListener("abort", unsubscribe, { once: true });
    deps.onServiceController?.(controller);
    start(
      "service",
      () => controller.run(signal).finally(() => deps.onServiceController?.(undefined)),
    );
  }
  const routes = deps.provider.routes;
  if (enabled.has("route") && !routes) {
    // upstream: Routes not supported -> a warning, and the controller is skipped
    log.warn(
      "Not starting node-route-controller: provider {provider} has no Routes " +
        "(no [[bgp.peers]] entry with pod_cidrs = true)",
      { provider: deps.provider.providerName },
    );
  }
  if (enabled.has("route") && routes) {
    const controller = new RouteController({
      nodes: deps.caches.nodes,
      routes,
      ...writesOf(ROUTE_CONTROLLER_EVENT_COMPONENT, CLIENT_NAMES.route),
      registry: deps.registry,
    }, {
      clusterName: config.cluster.name,
      periodMs: config.controllers.route_reconciliation_period.ms,
    });
    start("route", () => controller.run(signal));
  }
  if (enabled.has("pv-labels")) {
    const controller = new PvLabelsController({
      volumes: deps.caches.volumes,
      nodes: deps.caches.nodes,
      writer: createClusterWriter(clientOf(CLIENT_NAMES.pvLabels)),
      registry: deps.registry,
    });
    start("pv-labels", () => controller.run(signal));
  }
  await Promise.all(runs);
  // pending Event writes get a short grace period, then are dropped (bounded stop)
  await Promise.all(recorders.map((r) => r.close()));
}
