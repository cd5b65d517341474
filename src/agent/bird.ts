/**
 * BIRD on a control-plane host: the announcer that renders and configures, the session monitor
 * behind the BGP metrics and the Routes capability, and, when the control-plane VIP is announced
 * over BGP, the kube-apiserver probe that gates it. Needs no Kubernetes API, so the control-plane
 * VIP is announced before the cluster exists. On stop it withdraws every VIP before it returns.
 *
 * @module
 */
import type { V1Node, V1Service } from "@kubernetes/client-node";
import type { Registry } from "prom-client";
import type { Routes } from "../cloud/provider.ts";
import type { Config } from "../config/types.ts";
import { durationMs } from "../config/types.ts";
import { createEventSink } from "../kube/cluster_writer.ts";
import { AggregatingEventRecorder } from "../kube/event_recorder.ts";
import type { KubeClient } from "../kube/kube_client.ts";
import { abortableSleep } from "../kube/rate_limiter.ts";
import { logger } from "../log/logging.ts";
import { ApiserverProbe } from "../../providers/baremetal/control_plane/apiserver_probe.ts";
import {
  BirdAnnouncer,
  type BirdAnnouncerOptions,
} from "../../providers/baremetal/bird/announcer.ts";
import { BirdApplier } from "../../providers/baremetal/bird/config_applier.ts";
import { BirdRoutes } from "../../providers/baremetal/bird/routes.ts";
import { SessionMonitor } from "../../providers/baremetal/bird/session_monitor.ts";
import type { ClusterCaches } from "./cluster_caches.ts";
import { createEndpointLocator } from "./endpoint_locator.ts";

/** Options of `startBird`. */
export interface BirdOptions {
  config: () => Config;
  host: string;
  registry: Registry;
  signal: AbortSignal;
  /** This host may attract Service traffic (its Node is Ready). @default always */
  healthy?: () => boolean;
  /** Told of Services whose VIPs this host starts announcing. */
  onAnnounced?: BirdAnnouncerOptions["onAnnounced"];
}

/** The running BIRD side. */
export interface RunningBird {
  announcer: BirdAnnouncer;
  sessions: SessionMonitor;
  /** The Routes capability, when a peer of this host receives pod CIDRs. */
  routes: Routes | undefined;
  /** Resolves once the VIPs are withdrawn after the stop signal and every loop has stopped. */
  finished: Promise<void>;
}

/**
 * Starts the BIRD side when the inventory has `[bgp]` and this host is a control-plane machine
 * peering with at least one router; otherwise returns undefined.
 * @param options config source, host, registry, signal
 */
export async function startBird(options: BirdOptions): Promise<RunningBird | undefined> {
  const log = logger("bird");
  const config = options.config();
  const bgp = config.bgp;
  if (!bgp) return undefined;
  const machine = config.machines.find((m) => m.name === options.host);
  if (!machine || machine.role !== "control-plane") {
    log.info("Host {host} is not a control-plane machine of the inventory: not rendering BIRD", {
      host: options.host,
    });
    return undefined;
  }
  const applier = new BirdApplier({
    configFile: bgp.config_file,
    socket: bgp.socket,
    checkCommand: bgp.check_command,
    registry: options.registry,
  });
  const loops: Promise<void>[] = [];
  let probe: ApiserverProbe | undefined;
  const cp = config.control_plane;
  const announcer = new BirdAnnouncer({
    config: options.config,
    host: options.host,
    applier,
    controlPlaneHealthy: () => probe?.state === "healthy",
    ...(options.healthy ? { healthy: options.healthy } : {}),
    ...(options.onAnnounced ? { onAnnounced: options.onAnnounced } : {}),
  });
  if (cp.announce === "bgp" && cp.vip.length > 0) {
    probe = new ApiserverProbe({
      url: `https://127.0.0.1:${cp.port}/readyz`,
      trackFile: `${config.keepalived.track_file_dir.replace(/\/+$/, "")}/apiserver-health-bgp`,
      intervalMs: durationMs(cp.health_interval),
      timeoutMs: durationMs(cp.health_timeout),
    });
    loops.push(probeLoop(probe, announcer, options));
  }
  const sessions = new SessionMonitor({ config: options.config, registry: options.registry });
  const stop = new AbortController();
  loops.push(sessions.run(stop.signal));
  await announcer.sync("startup");
  const routes = bgp.peers.some((p) => p.pod_cidrs)
    ? new BirdRoutes({ announcer, sessions })
    : undefined;
  // drain before exit: withdraw, wait for BIRD to have the file, then stop polling
  const drained = new Promise<void>((resolve) => {
    const drain = async () => {
      try {
        const result = await announcer.drain();
        log.info("Withdrew every VIP before stopping: {message}", {
          message: result?.message ?? "nothing rendered",
        });
      } catch (error) {
        log.error("Could not withdraw the VIPs: {error}", { error: String(error) });
      } finally {
        stop.abort();
        resolve();
      }
    };
    if (options.signal.aborted) drain();
    else options.signal.addEventListener("abort", drain, { once: true });
  });
  return {
    announcer,
    sessions,
    routes,
    finished: Promise.all([drained, ...loops]).then(() => undefined),
  };
}

async function probeLoop(probe: ApiserverProbe, announcer: BirdAnnouncer, options: BirdOptions) {
  let last = probe.state;
  while (!options.signal.aborted) {
    const state = await probe.tick(options.signal);
    if (state !== last) {
      last = state;
      await announcer.sync(`kube-apiserver is ${state}`).catch(() => {});
    }
    const interval = durationMs(options.config().control_plane.health_interval);
    await abortableSleep(state === "unknown" ? Math.min(interval, 200) : interval, options.signal)
      .catch(() => {});
  }
}

/**
 * Whether this host's Node is Ready, as far as the Node cache knows: a host whose kubelet is
 * not Ready withdraws its VIPs. Unknown (no cache, no Node yet) counts as ready, so a cluster
 * that is still coming up is not cut off.
 * @param nodes the Node cache, once it exists
 * @param host this host's Node name
 */
export function hostNodeReady(
  nodes: { get(key: string): V1Node | undefined; hasSynced(): boolean } | undefined,
  host: string,
): boolean {
  if (!nodes?.hasSynced()) return true;
  const node = nodes.get(host);
  if (!node) return true;
  const ready = node.status?.conditions?.find((c) => c.type === "Ready");
  return ready === undefined || ready.status === "True";
}

/**
 * Feeds the announcer from the caches: Services, Nodes (pod CIDRs, this host's readiness) and
 * EndpointSlices (`externalTrafficPolicy: Local`), once Services and Nodes have synced.
 */
export function wireBirdCaches(
  bird: RunningBird,
  caches: ClusterCaches,
  config: () => Config,
  signal: AbortSignal,
): void {
  const log = logger("bird");
  const failed = (error: unknown) =>
    log.error("Rendering BIRD failed: {error}", { error: String(error) });
  const resync = (reason: string) => () => bird.announcer.sync(reason).catch(failed);
  const offs = [
    caches.services.subscribe(resync("services changed")),
    caches.nodes.subscribe(resync("nodes changed")),
    caches.endpointSlices.subscribe(resync("endpoints changed")),
  ];
  signal.addEventListener("abort", () => offs.forEach((off) => off()), { once: true });
  const locator = createEndpointLocator(caches.endpointSlices, caches.nodes, config);
  Promise.all([caches.services.waitForSync(signal), caches.nodes.waitForSync(signal)])
    .then(([a, b]) => {
      if (!a || !b) return;
      return bird.announcer.setClusterSource({
        services: caches.services,
        nodes: caches.nodes,
        hasSynced: () => caches.services.hasSynced() && caches.nodes.hasSynced(),
        endpointNodeNames: (service) => locator.endpointNodeNames(service),
      });
    }).catch(failed);
}

/** Reason of the Event on a Service whose VIP a host starts announcing over BGP. */
export const ANNOUNCED_BY_BGP_REASON = "AnnouncedByBGP";

/**
 * An Event recorder for the announcer: a Normal `AnnouncedByBGP` Event on the Service, naming
 * this host and the VIPs.
 */
export function birdServiceEvent(
  client: KubeClient,
  host: string,
): (service: V1Service, vips: string[]) => void {
  const recorder = new AggregatingEventRecorder(createEventSink(client), {
    component: "keelson-bgp",
    host,
  });
  return (service, vips) =>
    recorder.event(
      { kind: "Service", apiVersion: "v1", metadata: { ...service.metadata } },
      "Normal",
      ANNOUNCED_BY_BGP_REASON,
      `Host ${host} announces ${vips.join(", ")} over BGP`,
    );
}
