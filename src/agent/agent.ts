/**
 * The running agent: configuration and reloads, the health and metrics server, keepalived on
 * control-plane hosts, the Kubernetes connection with its caches, and leader election around the
 * controllers. This is the composition root: the only place where controllers meet providers.
 *
 * @module
 */
import type { V1Service } from "@kubernetes/client-node";
import { Gauge } from "prom-client";
import type { CloudProvider } from "../cloud/provider.ts";
import { ProviderRegistry } from "../cloud/registry.ts";
import { ConfigReloader } from "../config/reloader.ts";
import type { Config } from "../config/types.ts";
import { durationMs } from "../config/types.ts";
import { ReloadDeletionGuard } from "../controllers/node_lifecycle/deletion_guards.ts";
import { CLIENT_NAMES, type ClientFactory, createClientFactory } from "../kube/client_factory.ts";
import { createKubeClient, type KubeClient } from "../kube/kube_client.ts";
import { KubeconfigError, resolveConnectionSettings } from "../kube/kubeconfig.ts";
import { LeaderElector } from "../kube/leader_election.ts";
import { leaseApiFromCoordinationApi } from "../kube/lease_api.ts";
import { abortableSleep } from "../kube/rate_limiter.ts";
import { logger } from "../log/logging.ts";
import { createMetricsRegistry } from "../metrics/registry.ts";
import { createServer } from "../server/create_server.ts";
import { HealthChecks } from "../server/health_checks.ts";
import { serve } from "../server/serve.ts";
import { registerBaremetal } from "../../providers/baremetal/mod.ts";
import { createLoadBalancer } from "../../providers/baremetal/load_balancer.ts";
import { createClusterCaches } from "./cluster_caches.ts";
import { startKeepalived } from "./keepalived.ts";
import { runLeaderControllers, type RunningServiceController } from "./leader_controllers.ts";
import { reportOrphanedAddresses } from "./orphaned_addresses.ts";

/** Inputs of `runAgent`, already parsed by `keelson run`. */
export interface AgentOptions {
  configPath: string;
  /** The validated configuration, with flag overrides applied. */
  config: Config;
  /** Applies the flag overrides to a reloaded configuration. */
  applyFlags: (config: Config) => Config;
  /** This host's machine name. */
  host: string;
  /** Stops the agent (SIGTERM/SIGINT). */
  signal: AbortSignal;
}

const KUBE_RETRY_MS = 10_000;

/**
 * Runs until `options.signal` aborts.
 * @returns the exit code
 */
export async function runAgent(options: AgentOptions): Promise<number> {
  const log = logger("agent");
  const { signal } = options;
  const registry = createMetricsRegistry();
  const health = new HealthChecks();
  let config = options.config;
  let serviceController: RunningServiceController | undefined;
  const guard = new ReloadDeletionGuard();
  guard.onConfig(config);

  const managed = new Gauge({
    name: "running_managed_controllers",
    help: "Controllers this process runs (1 while running), as upstream controller managers.",
    labelNames: ["name", "manager"],
    registers: [registry],
  });

  // The provider asks it whether the last reload validated (fail closed after a rejected one);
  // onChange runs only once run() below has started, when everything it names exists.
  const reloader = new ConfigReloader(options.configPath, options.config, {
    registry,
    onChange: async (next) => {
      config = options.applyFlags(next);
      guard.onConfig(config);
      await keepalived?.announcer.sync("configuration reloaded");
      if (serviceController && live.services) {
        serviceController.controller.requeuePending();
        reportOrphanedAddresses(config, live.services.list(), serviceController.events);
      }
    },
  });
  // Filled in once the Kubernetes connection exists (the provider is built before it).
  const live: {
    services?: { list(): V1Service[]; get(key: string): V1Service | undefined };
    servicesSynced: () => boolean;
  } = { servicesSynced: () => false };
  const providers = new ProviderRegistry();
  registerBaremetal(providers, {
    // the live inventory: reloads apply at once, and a rejected reload blocks anything
    // destructive (an inventory that is not known good never deletes)
    inventory: () => ({ config, healthy: reloader.lastReloadSucceeded() }),
    loadBalancer: () =>
      createLoadBalancer({
        config: () => config,
        services: () => live.services,
        hasSynced: () => live.servicesSynced(),
        registry,
      }),
  });
  let provider: CloudProvider;
  try {
    provider = providers.create(config);
  } catch (error) {
    log.fatal("{error}", { error: error instanceof Error ? error.message : String(error) });
    return 1;
  }

  const keepalived = await startKeepalived({
    config: () => config,
    host: options.host,
    registry,
    signal,
  });

  const reloads = reloader.run(signal);

  let cachesSynced = () => false;
  let kubeConfigured = false;
  const app = createServer({
    registry,
    health,
    ready: () => {
      const reasons: string[] = [];
      if (!kubeConfigured) reasons.push("no Kubernetes connection yet");
      else if (!cachesSynced()) reasons.push("caches have not synced");
      return { ok: reasons.length === 0, reasons };
    },
    metricsToken: metricsTokenReader(() => config.server.metrics_token_file),
  });
  let serving;
  try {
    serving = await serve(app, {
      listen: config.server.listen,
      ...(config.server.tls_cert_file ? { certFile: config.server.tls_cert_file } : {}),
      ...(config.server.tls_key_file ? { keyFile: config.server.tls_key_file } : {}),
      signal,
    });
    log.info("Serving health and metrics on {url}", { url: serving.url });
  } catch (error) {
    log.fatal("Cannot serve health and metrics on {listen}: {error}", {
      listen: config.server.listen,
      error: String(error),
    });
    return 1;
  }

  const client = await connect(() => config, registry, signal);
  if (!client) {
    await Promise.all([reloads, serving.finished, keepalived?.finished]);
    return 0;
  }
  kubeConfigured = true;
  // one rate limit per named client, as upstream's ClientBuilder (--kube-api-qps/burst each)
  const { qps, burst } = config.kubernetes;
  const clients = createClientFactory(client, { qps, burst });
  const caches = createClusterCaches(clients.client(CLIENT_NAMES.informers), registry);
  live.services = caches.services;
  live.servicesSynced = () => caches.services.hasSynced();
  cachesSynced = () => caches.synced();
  const informers = caches.run(signal);
  if (keepalived) {
    const failed = (error: unknown) =>
      log.error("Rendering keepalived failed: {error}", { error: String(error) });
    caches.services.subscribe(() => {
      keepalived.announcer.sync("services changed").catch(failed);
    });
    caches.services.waitForSync(signal).then((ok) => {
      if (!ok) return;
      return keepalived.announcer.setServiceSource({
        services: caches.services,
        hasSynced: () => caches.services.hasSynced(),
      });
    }).catch(failed);
  }

  const controllers = (leaderSignal: AbortSignal) =>
    runLeaderControllers({
      config: () => config,
      clients,
      caches,
      provider,
      registry,
      health,
      guard,
      onServiceController: (c) => serviceController = c,
    }, leaderSignal);

  const trackManaged = async (leaderSignal: AbortSignal) => {
    const names = ["cloud-node", "cloud-node-lifecycle", "service", "pv-labels"];
    for (const name of names) managed.set({ name, manager: "keelson" }, 1);
    try {
      if (!await caches.waitForSyncAll(leaderSignal)) return;
      await provider.initialize?.({ nodes: caches.nodes, services: caches.services, signal });
      await controllers(leaderSignal);
    } finally {
      for (const name of names) managed.set({ name, manager: "keelson" }, 0);
    }
  };

  if (config.leader_election.enabled) {
    await campaign(clients, () => config, health, registry, trackManaged, signal);
  } else {
    log.info("Leader election is off: starting controllers now");
    await trackManaged(signal);
  }
  await Promise.all([informers, reloads, serving.finished, keepalived?.finished]);
  client.close();
  log.info("Stopped");
  return 0;
}

/**
 * Campaigns for the Lease until `signal` aborts; leadership lost means the controllers stop and
 * this process campaigns again (upstream exits instead; staying up keeps health, metrics and
 * keepalived rendering alive).
 */
async function campaign(
  clients: ClientFactory,
  config: () => Config,
  health: HealthChecks,
  registry: import("prom-client").Registry,
  lead: (leaderSignal: AbortSignal) => Promise<void>,
  signal: AbortSignal,
): Promise<void> {
  const log = logger("agent");
  const le = config().leader_election;
  let identity: string | undefined;
  while (!signal.aborted) {
    const lease = leaseApiFromCoordinationApi(
      clients.client(CLIENT_NAMES.leaderElection).coordination,
    );
    const elector = new LeaderElector(lease, {
      namespace: le.namespace,
      name: le.name,
      leaseDurationMs: durationMs(le.lease_duration),
      renewDeadlineMs: durationMs(le.renew_deadline),
      retryPeriodMs: durationMs(le.retry_period),
      registry,
      // client-go jitters acquire retries by up to 1.2 retry periods; a smaller jitter lets a
      // standby take a released Lease within ~1.25 retry periods (SIGTERM hand-over < 3 s)
      jitterFactor: 0.25,
      ...(identity ? { identity } : {}),
    });
    identity = elector.identity;
    health.add("leaderElection", () => elector.healthCheck());
    let leading: Promise<void> | undefined;
    await elector.run(signal, {
      onStartedLeading: (leaderSignal) => {
        log.info("Became leader as {identity}", { identity: elector.identity });
        leading = lead(leaderSignal);
        return leading;
      },
      onStoppedLeading: () => log.warn("Lost leadership; controllers stopped"),
      onNewLeader: (holder) => {
        if (holder && holder !== elector.identity) {
          log.info("Leader is {holder}", { holder });
        }
      },
    });
    await leading;
    if (!signal.aborted) {
      await abortableSleep(durationMs(le.retry_period), signal).catch(() => {});
    }
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
      const message = error instanceof KubeconfigError || error instanceof Error
        ? error.message
        : String(error);
      if (message !== lastError) {
        log.error("{message}; retrying every {seconds}s (keepalived keeps running)", {
          message,
          seconds: KUBE_RETRY_MS / 1000,
        });
        lastError = message;
      }
      // abortableSleep rejects on abort; a stop while waiting is the normal way out
      await abortableSleep(KUBE_RETRY_MS, signal).catch(() => {});
    }
  }
  return undefined;
}

/** Reads the metrics token file at most every 10 s, so a rotated token takes effect. */
function metricsTokenReader(path: () => string | undefined): () => string | undefined {
  let cached:
    | { path: string; token: string | undefined; at: number; readable: boolean }
    | undefined;
  return () => {
    const file = path();
    if (!file) return undefined;
    if (!cached || cached.path !== file || Date.now() - cached.at > 10_000) {
      let token: string | undefined;
      let readable = true;
      try {
        token = Deno.readTextFileSync(file).trim();
        if (!token) throw new Error("the file is empty");
      } catch (error) {
        // fail closed: a configured but unreadable token file must not open /metrics
        token = crypto.randomUUID();
        readable = false;
        if (cached?.path !== file || cached.readable) {
          logger("agent").error("Cannot read {file}; /metrics refuses every request: {error}", {
            file,
            error: String(error),
          });
        }
      }
      cached = { path: file, token, at: Date.now(), readable };
    }
    return cached.token;
  };
}
