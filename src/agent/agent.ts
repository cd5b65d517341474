/**
 * The running agent, as a table of contents: build the provider, start its host side, serve
 * health and metrics, connect to Kubernetes, campaign for the Lease, and lead (run the
 * controllers) while it is held. This is the composition root: the only place where controllers
 * meet a provider, which it knows only through the contract (`src/cloud/provider.ts`) and the
 * registry entry.
 *
 * @module
 */
import type { Registry } from "prom-client";
import type { CloudProvider } from "../cloud/provider.ts";
import { ProviderRegistry } from "../cloud/registry.ts";
import type { Config } from "../config/types.ts";
import { agentMode } from "../config/agent_mode.ts";
import { CLIENT_NAMES, type ClientFactory, createClientFactory } from "../kube/client_factory.ts";
import { createEventSink } from "../kube/cluster_writer.ts";
import { AggregatingEventRecorder } from "../kube/event_recorder.ts";
import { createKubeClient, type KubeClient } from "../kube/kube_client.ts";
import { resolveConnectionSettings } from "../kube/kubeconfig.ts";
import { LeaderElector } from "../kube/leader_election.ts";
import { machineIdentity } from "../kube/elector_options.ts";
import { createLeaseApi } from "../kube/lease_api.ts";
import { LedgerSightings, observingLeases } from "../controllers/action_ledger/ledger_sightings.ts";
import { delay } from "../kube/delay.ts";
import { droppedLogLines, logger } from "../log/logging.ts";
import { logLineMetrics } from "../log/log_metrics.ts";
import { createMetricsRegistry } from "../metrics/registry.ts";
import { createServer } from "../server/create_server.ts";
import { HealthChecks } from "../server/health_checks.ts";
import { metricsTokenReader } from "../server/metrics_token_file.ts";
import { serve } from "../server/serve.ts";
import { registerBuiltInProviders } from "../../providers/mod.ts";
import { createClusterCaches } from "./cluster_caches.ts";
import { createHeartbeatInformer, startHeartbeat } from "./heartbeat.ts";
import { createKubeletLeaseInformer } from "../kube/kubelet_leases.ts";
import { LiveConfig } from "./live_config.ts";
import { managedControllersGauge, runLeaderControllers } from "./leader_controllers.ts";
import type { ServiceController } from "../controllers/service/service_controller.ts";
import { errorMessage } from "../log/error_message.ts";
import { watchHostSide } from "./host_side_failure.ts";
import { StopSequence } from "./shutdown.ts";
import { declareStartupMetrics } from "./startup_metrics.ts";

/** Inputs of `runAgent`, already parsed by `keelson run`. */
export interface AgentOptions {
  configPath: string;
  /** The validated configuration, with flag overrides applied. */
  config: Config;
  /** Applies the flag overrides to a reloaded configuration. */
  applyFlags: (config: Config) => Config;
  /** This host's machine name. */
  host: string;
  /** The digest of the inventory file `config` was read from (`loadInventory`). */
  inventorySha256?: string;
  /** Stops the agent (SIGTERM/SIGINT). */
  signal: AbortSignal;
  /** Cuts the stop short (a second SIGTERM/SIGINT): every part told at once, a short bound. */
  hurry?: AbortSignal;
  /** Builds the provider instead of the registry (tests). @default the `[cluster] provider` */
  provider?: (config: Config) => CloudProvider;
}

const KUBE_RETRY_MS = 10_000;

/**
 * Runs until `options.signal` aborts. Each part is built from parts built before it.
 * @returns the exit code
 */
export async function runAgent(options: AgentOptions): Promise<number> {
  const log = logger("agent");
  const { signal, host } = options;
  // each part stops on its own step's signal, in order, once `signal` aborts (shutdown.ts)
  const stops = new StopSequence();
  const registry = createMetricsRegistry();
  logLineMetrics(registry, droppedLogLines);
  managedControllersGauge(registry);
  const health = new HealthChecks();
  // the configuration in force: flags applied, start-only settings kept, reloads (once run)
  const live = new LiveConfig({
    configPath: options.configPath,
    config: options.config,
    applyFlags: options.applyFlags,
    host,
    registry,
    ...(options.inventorySha256 ? { inventorySha256: options.inventorySha256 } : {}),
  });

  // 1. the provider, through its registry entry: the live inventory, so reloads apply at once,
  // and a rejected reload blocks anything destructive (an inventory not known good never deletes)
  const provider = createProvider(options, live, registry);
  if (!provider) return 1;
  // leader, API client and work-queue series exist from the first scrape, connected or not
  declareStartupMetrics(registry, live.current(), provider);
  // an accepted reload reaches the provider, then the service controller while one runs
  let serviceController: ServiceController | undefined;
  live.onChange(async (reason) => {
    await provider.reconfigure?.(reason);
    serviceController?.requeuePending();
  });

  // 2. the host side (keepalived, BIRD): every host, before and without any Kubernetes connection
  const hostSide = await provider.startHost?.({ host, signal: stops.signal("background") });
  // BIRD withdraws this host's VIPs when this step's signal aborts, before the process exits
  stops.track("background", "host side (keepalived, BIRD)", hostSide?.finished);
  // a host side that stopped on its own leaves keepalived and BIRD unmanaged: stop, exit 1
  const broken = watchHostSide(hostSide?.stopped, signal, health);
  const stopping = AbortSignal.any([signal, broken.signal]);
  stops.track(
    "background",
    "configuration reloader",
    live.reloader.run(stops.signal("background")),
  );

  // 3. health and metrics; ready once connected and the caches synced
  let readiness = (): Readiness => ({ ok: false, reasons: ["no Kubernetes connection yet"] });
  const serving = await serveHealth({
    config: live.current(),
    registry,
    health,
    metricsToken: metricsTokenReader(() => live.current().server.metrics_token_file),
    ready: () => readiness(),
    signal: stops.signal("server"),
  });
  if (!serving) return 1;
  stops.track("server", "health server", serving.finished);

  // 4. the Kubernetes connection and its caches (every host: the host side reads Services)
  const client = await connect(() => live.current(), registry, stopping);
  if (!client) return broken.code(await stopAll(stops, options.hurry));
  // one rate limit per named client, as upstream's ClientBuilder (--kube-api-qps/burst each)
  const { qps, burst } = live.current().kubernetes;
  const clients = createClientFactory(client, { qps, burst });
  // decided once from the inventory at start; a reload that changes it needs a restart
  const mode = agentMode(live.current(), host);
  const caches = createClusterCaches(clients.client(CLIENT_NAMES.informers), registry, mode);
  const informersSignal = stops.signal("informers");
  stops.track("informers", "informers", caches.run(informersSignal));
  readiness = () =>
    caches.synced()
      ? { ok: true, reasons: [] }
      : { ok: false, reasons: ["caches have not synced"] };
  // what the provider sees of the cluster may reject a reload (e.g. addresses Services hold)
  live.addCheck((next, inForce) =>
    provider.validateReload?.(next, inForce, options.configPath) ?? []
  );
  // events from this host (e.g. a VIP it starts announcing), closed with a grace at stop
  const hostEvents = new AggregatingEventRecorder(
    createEventSink(clients.client(CLIENT_NAMES.hostEvents)),
    { component: "keelson", host },
  );
  const hostEventsClosed = new Promise((resolve) =>
    stops.signal("background").addEventListener("abort", resolve, { once: true })
  ).then(() => hostEvents.close());
  stops.track("background", "host events", hostEventsClosed);
  provider.connect?.({
    nodes: caches.nodes,
    services: caches.services,
    endpointSlices: caches.endpointSlices,
    events: hostEvents,
    signal: informersSignal,
  });
  // this host's heartbeat Lease: its data plane as the host side sees it (every host)
  const heartbeat = startHeartbeat({
    client: clients.client(CLIENT_NAMES.heartbeat),
    host,
    dataPlane: hostSide?.dataPlane,
    reloads: live.reloader,
    inventory: () => live.reloader.inventoryInForce(),
    pools: () => provider.poolUsage?.() ?? [],
    power: () => provider.machinePower?.() ?? [],
    nodes: caches.nodes,
    restartRequired: () => live.restart.pending(),
    signal: informersSignal,
  });
  stops.track("informers", "heartbeat", heartbeat);

  // 5. lead: once the caches synced, initialize the provider and run the enabled controllers
  // when this process first saw each recorded power action, while standing by too
  const sightings = new LedgerSightings();
  const lead = async (leaderSignal: AbortSignal, identity?: string) => {
    if (!await caches.waitForSyncAll(leaderSignal)) return;
    await runLeaderControllers({
      ...(identity ? { identity } : {}),
      config: () => live.current(),
      clients,
      caches,
      heartbeatLeases: createHeartbeatInformer(clients.client(CLIENT_NAMES.vipHosts), registry),
      kubeletLeases: createKubeletLeaseInformer(
        clients.client(CLIENT_NAMES.outOfService),
        registry,
      ),
      host,
      ...(identity === undefined ? {} : { leaseHolder: identity }),
      ledgerSightings: sightings,
      provider,
      registry,
      health,
      guard: live.guard,
      onServiceController: (running) => serviceController = running,
    }, leaderSignal);
  };

  // 6. campaign for the Lease, leading while it is held; a worker that serves pools runs its
  // host side and heartbeat, nothing more (agent_mode.ts)
  const controllersSignal = stops.signal("controllers");
  if (mode === "host-side") {
    log.info(
      "Host {host} is a worker that serves pools: host-side mode (keepalived/BIRD for the " +
        "pools it serves and its heartbeat; no controllers, no leader election)",
      { host },
    );
  } else if (live.current().leader_election.enabled) {
    const campaigning = campaign({
      clients,
      sightings,
      config: () => live.current(),
      health,
      registry,
      host,
      lead,
      signal: controllersSignal,
    });
    stops.track("controllers", "leader election and controllers", campaigning);
  } else {
    log.info("Leader election is off: starting controllers now");
    stops.track("controllers", "controllers", lead(controllersSignal));
  }
  if (!stopping.aborted) {
    await new Promise((resolve) => stopping.addEventListener("abort", resolve, { once: true }));
  }
  try {
    return broken.code(await stopAll(stops, options.hurry));
  } finally {
    client.close();
  }
}

/**
 * The provider of the `[cluster] provider` entry (or `options.provider`), reading the live
 * inventory; undefined (logged) when it cannot be built.
 */
function createProvider(
  options: AgentOptions,
  live: LiveConfig,
  registry: Registry,
): CloudProvider | undefined {
  const providers = new ProviderRegistry();
  registerBuiltInProviders(providers, {
    inventory: () => ({ config: live.current(), healthy: live.lastReloadSucceeded() }),
    metrics: registry,
  });
  try {
    return options.provider?.(live.current()) ?? providers.create(live.current());
  } catch (error) {
    logger("agent").fatal("{error}", { error: errorMessage(error) });
    return undefined;
  }
}

/** What /readyz answers. */
interface Readiness {
  ok: boolean;
  reasons: string[];
}

/** Runs the stop sequence once the agent's signal aborted; 0 when everything stopped in time. */
async function stopAll(stops: StopSequence, hurry: AbortSignal | undefined): Promise<number> {
  const outcome = await stops.stop(undefined, hurry);
  if (!outcome.ok) return 1;
  logger("agent").info("Stopped in {ms} ms", { ms: Math.round(outcome.ms) });
  return 0;
}

/** Options of `serveHealth`. */
interface ServeHealthOptions {
  config: Config;
  registry: Registry;
  health: HealthChecks;
  metricsToken: () => Promise<string | undefined>;
  ready: () => Readiness;
  signal: AbortSignal;
}

/** Serves /healthz, /livez, /readyz and /metrics; undefined (logged) when it cannot listen. */
async function serveHealth(options: ServeHealthOptions) {
  const log = logger("agent");
  const { server } = options.config;
  const app = createServer({
    registry: options.registry,
    health: options.health,
    ready: options.ready,
    metricsToken: options.metricsToken,
  });
  try {
    const serving = await serve(app, {
      listen: server.listen,
      ...(server.tls_cert_file ? { certFile: server.tls_cert_file } : {}),
      ...(server.tls_key_file ? { keyFile: server.tls_key_file } : {}),
      signal: options.signal,
    });
    return serving; // serve() logs the address it listens on
  } catch (error) {
    log.fatal("Cannot serve health and metrics on {listen}: {error}", {
      listen: server.listen,
      error: errorMessage(error),
    });
    return undefined;
  }
}

/** Options of `campaign`. */
interface CampaignOptions {
  /** The Lease calls go through the `leader-election` client (a rate limit of its own). */
  clients: ClientFactory;
  /** Shown every read and write of the Lease (the power actions recorded on it). */
  sightings: LedgerSightings;
  config: () => Config;
  health: HealthChecks;
  registry: Registry;
  /** This host's machine name: the identity names it (`machineIdentity`). */
  host: string;
  /**
   * Runs while this process holds the Lease (as `identity`); `leaderSignal` aborts when it is
   * lost.
   */
  lead: (leaderSignal: AbortSignal, identity: string) => Promise<void>;
  /** Stops campaigning (the process stops). */
  signal: AbortSignal;
}

/**
 * Campaigns for the Lease until `signal` aborts; leadership lost means the controllers stop and
 * this process campaigns again (upstream exits instead; staying up keeps health, metrics and
 * keepalived rendering alive).
 */
async function campaign(options: CampaignOptions): Promise<void> {
  const { clients, config, health, registry, lead, signal, sightings } = options;
  const log = logger("agent");
  const le = config().leader_election;
  const identity = machineIdentity(options.host);
  while (!signal.aborted) {
    const lease = observingLeases(
      createLeaseApi(clients.client(CLIENT_NAMES.leaderElection).rest),
      sightings,
    );
    const elector = new LeaderElector(lease, {
      namespace: le.namespace,
      name: le.name,
      leaseDurationMs: le.lease_duration.ms,
      renewDeadlineMs: le.renew_deadline.ms,
      retryPeriodMs: le.retry_period.ms,
      registry,
      // client-go jitters acquire retries by up to 1.2 retry periods; a smaller jitter lets a
      // standby take a released Lease within ~1.25 retry periods (SIGTERM hand-over < 3 s)
      jitterFactor: 0.25,
      identity,
    });
    health.add("leaderElection", () => elector.healthCheck());
    let leading: Promise<void> | undefined;
    await elector.run(signal, {
      // the elector logs the Lease acquired and each new leader; one line per event
      onStartedLeading: (leaderSignal) => {
        leading = lead(leaderSignal, identity);
        return leading;
      },
      onStoppedLeading: () => {
        // a stop releases the Lease and says so; a loss is logged by the elector
        if (!signal.aborted) log.warn("Controllers stopped; campaigning for the Lease again");
      },
    });
    await leading;
    await delay(le.retry_period.ms, signal);
  }
}

/** Resolves the kubeconfig and builds a client, retrying until it works or `signal` aborts. */
async function connect(
  config: () => Config,
  registry: import("prom-client").Registry,
  signal: AbortSignal,
): Promise<KubeClient | undefined> {
  const log = logger("agent");
  let lastError = "";
  while (!signal.aborted) {
    const { kubernetes } = config();
    try {
      const settings = await resolveConnectionSettings(
        kubernetes.kubeconfig ? { kubeconfig: kubernetes.kubeconfig } : {},
      );
      log.info("Connecting to {server} (credentials from {source})", {
        server: settings.server,
        source: settings.source,
      });
      return createKubeClient(settings, {
        registry,
        qps: kubernetes.qps,
        burst: kubernetes.burst,
        userAgent: "keelson",
      });
    } catch (error) {
      const message = errorMessage(error);
      if (message !== lastError) {
        log.error("{message}; retrying every {seconds}s (keepalived keeps running)", {
          message,
          seconds: KUBE_RETRY_MS / 1000,
        });
        lastError = message;
      }
      await delay(KUBE_RETRY_MS, signal);
    }
  }
  return undefined;
}
