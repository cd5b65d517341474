/**
 * Leading: initializes the provider, starts the controllers of the table (`controller_table.ts`)
 * that `--controllers` enables and the provider can run, and stops them when the leader signal
 * aborts. Each started controller gets a health check under its upstream name and a
 * `running_managed_controllers` series that is 1 while it runs.
 *
 * @module
 */
import type { V1Lease } from "@kubernetes/client-node";
import { Gauge, type Registry } from "prom-client";
import type { CloudProvider } from "../cloud/provider.ts";
import type { Config } from "../config/types.ts";
import { servingHostNames } from "../config/pool_serving.ts";
import {
  CANONICAL_NAMES,
  type ControllerName,
  resolveControllers,
} from "../config/controller_names.ts";
import type { DeletionGuard } from "../controllers/node_lifecycle/deletion_guards.ts";
import {
  SERVICE_CONTROLLER_EVENT_COMPONENT,
  type ServiceController,
} from "../controllers/service/service_controller.ts";
import { CLIENT_NAMES, type ClientFactory } from "../kube/client_factory.ts";
import { createNodePods } from "../kube/node_pods.ts";
import { createClusterWriter, createEventSink } from "../kube/cluster_writer.ts";
import { createLeaseApi } from "../kube/lease_api.ts";
import { ActionLedger } from "../controllers/action_ledger/action_ledger.ts";
import type { LedgerSightings } from "../controllers/action_ledger/ledger_sightings.ts";
import { AggregatingEventRecorder } from "../kube/event_recorder.ts";
import type { RunnableInformer } from "../kube/informer.ts";
import { logger } from "../log/logging.ts";
import { declareOnce } from "../metrics/registry.ts";
import type { HealthChecks } from "../server/health_checks.ts";
import { observedHeartbeats } from "../status/heartbeats.ts";
import { judgementLeaseName } from "../status/leader_judgement.ts";
import { publishJudgement } from "./judgement_publisher.ts";
import { RecordObserver } from "../status/observed_freshness.ts";
import type { ClusterCaches } from "./cluster_caches.ts";
import { CONTROLLER_TABLE, type LeaderTerm, providerCanRun } from "./controller_table.ts";

/** What the controllers are built from. */
export interface LeaderControllerDeps {
  config: () => Config;
  /** One client (and rate limit) per controller, its Events included, as upstream. */
  clients: ClientFactory;
  caches: ClusterCaches;
  /**
   * Every host's heartbeat Lease (`createHeartbeatInformer`, a new one per term), run here while
   * leading: read by the VIP-host controller and the provider's Routes, judged by one observer.
   */
  heartbeatLeases: RunnableInformer<V1Lease>;
  /**
   * The kubelets' node Leases (`createKubeletLeaseInformer`, a new one per term), run here while
   * the out-of-service controller runs: the second witness of a power loss.
   */
  kubeletLeases?: RunnableInformer<V1Lease>;
  /** This host's machine name (`--host`): the source host of the controllers' Events. */
  host: string;
  /** The identity this process holds the leader Lease under; undefined when election is off. */
  leaseHolder?: string;
  /** When this process first saw the recorded power actions (also before it led). */
  ledgerSightings?: LedgerSightings;
  provider: CloudProvider;
  registry: Registry;
  health: HealthChecks;
  guard: DeletionGuard;
  /** Called with the running service controller (undefined when it stops), for reloads. */
  onServiceController?: (running: ServiceController | undefined) => void;
  /**
   * This leader's identity (with leader election on): the heartbeat judgement is published for
   * `keelson status` (`judgement_publisher.ts`). @default not published
   */
  identity?: string;
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
export const CONTROLLER_QUEUES: Readonly<Record<ControllerName, readonly string[]>> = Object
  .fromEntries(CONTROLLER_TABLE.map((c) => [c.name, c.queues])) as Record<
    ControllerName,
    readonly string[]
  >;

/**
 * The controllers `runLeaderControllers` starts under `config`: the enabled ones whose capability
 * the provider has (upstream skips a controller whose cloud interface is missing).
 * @param config the configuration in force
 * @param provider the provider's capabilities
 * @returns the controllers it starts when leading
 */
export function startableControllers(
  config: Config,
  provider: Pick<CloudProvider, "instancesV2" | "loadBalancer" | "routes" | "power">,
): Set<ControllerName> {
  const enabled = enabledControllers(config);
  return new Set(
    CONTROLLER_TABLE.filter((c) => enabled.has(c.name) && providerCanRun(c, provider))
      .map((c) => c.name),
  );
}

function enabledControllers(config: Config): Set<ControllerName> {
  const resolved = resolveControllers(config.controllers.enabled);
  return "enabled" in resolved ? resolved.enabled : new Set<ControllerName>();
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
  const enabled = enabledControllers(config);
  const recorders: AggregatingEventRecorder[] = [];
  /** An event recorder for `component` on the controller's client, flushed when leading ends. */
  const events = (component: string, client: string) => {
    const sink = createEventSink(deps.clients.client(client));
    const recorder = new AggregatingEventRecorder(sink, { component, host: deps.host });
    recorders.push(recorder);
    return recorder;
  };
  // the heartbeat cache runs for the term, whichever controllers read it
  const leases = deps.heartbeatLeases.run(signal);
  // the kubelets' Leases only for the controller that reads them (a renewal per Node every 10 s)
  const kubeletLeases = enabled.has("out-of-service") && deps.provider.power
    ? deps.kubeletLeases
    : undefined;
  const kubeletLeasesRun = kubeletLeases?.run(signal);
  // one memory of when each heartbeat last changed, for every reader of them in this term
  const observer = new RecordObserver();
  // the provider's Warning events on Services (addresses no pool offers) are the service
  // controller's: recorded under its component, and only while it runs
  const serviceEvents = enabled.has("service") && deps.provider.loadBalancer
    ? events(SERVICE_CONTROLLER_EVENT_COMPONENT, CLIENT_NAMES.service)
    : undefined;
  await deps.provider.initialize?.({
    nodes: deps.caches.nodes,
    services: deps.caches.services,
    heartbeats: observedHeartbeats(deps.heartbeatLeases, observer),
    ...(serviceEvents ? { events: serviceEvents } : {}),
    signal,
  });

  // the destructive actions' rate limits, counted from their record on the leader Lease
  const ledger = new ActionLedger({
    leases: createLeaseApi(deps.clients.client(CLIENT_NAMES.leaderElection).rest),
    namespace: config.leader_election.namespace,
    name: config.leader_election.name,
    ...(deps.leaseHolder === undefined ? {} : { holder: deps.leaseHolder }),
    ...(deps.ledgerSightings ? { sightings: deps.ledgerSightings } : {}),
  });
  const term: LeaderTerm = {
    config,
    live: deps.config,
    caches: deps.caches,
    heartbeats: { leases: deps.heartbeatLeases, observer },
    ...(kubeletLeases ? { kubeletLeases } : {}),
    provider: deps.provider,
    registry: deps.registry,
    guard: deps.guard,
    ledger,
    host: deps.host,
    writer: (client) => createClusterWriter(deps.clients.client(client)),
    nodePods: (client) => createNodePods(deps.clients.client(client)),
    events,
    ...(serviceEvents ? { serviceEvents } : {}),
    ...(deps.onServiceController ? { onServiceController: deps.onServiceController } : {}),
  };
  const managed = managedControllersGauge(deps.registry);
  const runs: Promise<void>[] = [];
  if (deps.identity) {
    const le = config.leader_election;
    runs.push(publishJudgement({
      leases: createLeaseApi(deps.clients.client(CLIENT_NAMES.vipHosts).rest),
      namespace: le.namespace,
      name: judgementLeaseName(le.name),
      identity: deps.identity,
      heartbeats: observedHeartbeats(deps.heartbeatLeases, observer),
      synced: () => deps.heartbeatLeases.hasSynced(),
      servingHosts: () => servingHostNames(deps.config()),
      controlPlaneVips: () => deps.config().control_plane.vip,
    }, signal));
  }
  for (const entry of CONTROLLER_TABLE) {
    if (!enabled.has(entry.name)) continue;
    const check = CANONICAL_NAMES[entry.name];
    if (!providerCanRun(entry, deps.provider)) {
      // upstream: a controller whose cloud interface is missing is skipped with a warning
      const { interfaceName: capability, hint } = entry.needs!;
      const why = { name: check, provider: deps.provider.providerName, capability };
      if (hint) {
        log.warn("Not starting {name}: provider {provider} has no {capability} ({hint})", {
          ...why,
          hint,
        });
      } else log.warn("Not starting {name}: provider {provider} has no {capability}", why);
      continue;
    }
    const controller = entry.create(term, signal);
    deps.health.add(check, () => ({ ok: true }));
    managed.set({ name: entry.name, manager: "keelson" }, 1);
    log.info("Starting controller {name}", { name: check });
    runs.push(
      controller.run(signal).catch((error) => {
        log.error("Controller {name} stopped with an error: {error}", {
          name: check,
          error: String(error),
        });
      }).finally(() => {
        deps.health.remove(check);
        managed.set({ name: entry.name, manager: "keelson" }, 0);
      }),
    );
  }
  await Promise.all([...runs, leases, kubeletLeasesRun]);
  // pending Event writes get a short grace period, then are dropped (bounded stop)
  await Promise.all(recorders.map((r) => r.close()));
}
