/**
 * Starts the controllers that write to the API (leader only) and stops them when the leader
 * signal aborts. Each started controller gets a health check under its upstream name.
 *
 * @module
 */
import type { Registry } from "prom-client";
import type { CloudProvider } from "../cloud/provider.ts";
import type { Config } from "../config/types.ts";
import { durationMs } from "../config/types.ts";
import {
  CANONICAL_NAMES,
  type ControllerName,
  resolveControllers,
} from "../controllers/controller_names.ts";
import { NodeController } from "../controllers/node/node_controller.ts";
import type { DeletionGuard } from "../controllers/node_lifecycle/deletion_guards.ts";
import {
  NodeLifecycleController,
  policyFromConfig,
} from "../controllers/node_lifecycle/node_lifecycle_controller.ts";
import { PvLabelsController } from "../controllers/pv_labels/pv_labels_controller.ts";
import { handlesService } from "../controllers/service/handles_service.ts";
import {
  SERVICE_CONTROLLER_EVENT_COMPONENT,
  ServiceController,
} from "../controllers/service/service_controller.ts";
import { CLIENT_NAMES, type ClientFactory } from "../kube/client_factory.ts";
import { createClusterWriter, createEventSink } from "../kube/cluster_writer.ts";
import { AggregatingEventRecorder } from "../kube/event_recorder.ts";
import type { EventRecorder } from "../kube/ports.ts";
import { logger } from "../log/logging.ts";
import type { HealthChecks } from "../server/health_checks.ts";
import type { ClusterCaches } from "./cluster_caches.ts";
import { createEndpointLocator } from "./endpoint_locator.ts";

/** The service controller while it runs, with its event recorder. */
export interface RunningServiceController {
  controller: ServiceController;
  events: EventRecorder;
}

/** What the controllers are built from. */
export interface LeaderControllerDeps {
  config: () => Config;
  /** One client (and rate limit) per controller, its Events included, as upstream. */
  clients: ClientFactory;
  caches: ClusterCaches;
  provider: CloudProvider;
  registry: Registry;
  health: HealthChecks;
  guard: DeletionGuard;
  /** Called with the running service controller (undefined when it stops), for reloads. */
  onServiceController?: (running: RunningServiceController | undefined) => void;
}

/**
 * Runs the enabled controllers until `signal` aborts.
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
  const host = safeHostname();
  const clientOf = (name: string) => deps.clients.client(name);
  const recorder = (component: string, client: string) =>
    new AggregatingEventRecorder(createEventSink(clientOf(client)), { component, host });
  const recorders: AggregatingEventRecorder[] = [];
  const runs: Promise<void>[] = [];

  const start = (name: ControllerName, run: () => Promise<void>) => {
    const check = CANONICAL_NAMES[name];
    deps.health.add(check, () => ({ ok: true }));
    log.info("Starting controller {name}", { name: check });
    runs.push(
      run().catch((error) => {
        log.error("Controller {name} stopped with an error: {error}", {
          name: check,
          error: String(error),
        });
      }).finally(() => deps.health.remove(check)),
    );
  };

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
    const events = recorder("cloud-node-controller", CLIENT_NAMES.cloudNode);
    recorders.push(events);
    const controller = new NodeController({
      nodes: deps.caches.nodes,
      writer: createClusterWriter(clientOf(CLIENT_NAMES.cloudNode)),
      events,
      instances,
      registry: deps.registry,
    }, {
      workers: config.controllers.concurrent_node_syncs,
      statusUpdateFrequencyMs: durationMs(config.controllers.node_status_update_frequency),
    });
    start("cloud-node", () => controller.run(signal));
  }
  if (enabled.has("cloud-node-lifecycle") && instances) {
    const events = recorder("cloud-node-lifecycle-controller", CLIENT_NAMES.cloudNodeLifecycle);
    recorders.push(events);
    const controller = new NodeLifecycleController({
      nodes: deps.caches.nodes,
      writer: createClusterWriter(clientOf(CLIENT_NAMES.cloudNodeLifecycle)),
      events,
      instances,
      registry: deps.registry,
      guard: deps.guard,
    }, {
      monitorPeriodMs: durationMs(config.controllers.node_monitor_period),
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
    const events = recorder(SERVICE_CONTROLLER_EVENT_COMPONENT, CLIENT_NAMES.service);
    recorders.push(events);
    const controller = new ServiceController({
      services: deps.caches.services,
      nodes: deps.caches.nodes,
      writer: createClusterWriter(clientOf(CLIENT_NAMES.service)),
      events,
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
    deps.onServiceController?.({ controller, events });
    start(
      "service",
      () => controller.run(signal).finally(() => deps.onServiceController?.(undefined)),
    );
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
  await Promise.all(recorders.map((r) => r.flush()));
}

function safeHostname(): string {
  try {
    return Deno.hostname();
  } catch {
    return "";
  }
}
