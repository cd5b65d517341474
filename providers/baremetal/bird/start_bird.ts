/**
 * BIRD on a control-plane host: the announcer that renders and configures, the session monitor
 * behind the BGP metrics and the Routes capability, and, when the control-plane VIP is announced
 * over BGP, the kube-apiserver probe that gates it. Needs no Kubernetes API, so the control-plane
 * VIP is announced before the cluster exists. On stop it withdraws every VIP before it returns.
 * A reload that removes `[bgp]` withdraws every route this host announces (`announcer.ts`); the
 * rest stays until a restart, which then starts none of it.
 *
 * @module
 */
import { stagedPaths } from "../../../src/config/stage_dir.ts";
import { daemonPaths } from "../../../src/config/daemon_dir.ts";
import type { V1EndpointSlice, V1Node, V1Service } from "@kubernetes/client-node";
import { Gauge, type Registry } from "prom-client";
import { declareOnce } from "../../../src/metrics/registry.ts";
import { bgpAnnouncedAddresses } from "../../../src/status/host_report.ts";
import { bgpPeerReports } from "./bgp_report.ts";
import { BgpAnnouncementTracker } from "./bgp_announcements.ts";
import type { ClusterContext, Routes } from "../../../src/cloud/provider.ts";
import { runsBird } from "../../../src/config/restart_settings.ts";
import { delay } from "../../../src/kube/delay.ts";
import type { Lister } from "../../../src/kube/ports.ts";
import { logger } from "../../../src/log/logging.ts";
import { ApiserverProbe } from "../control_plane/apiserver_probe.ts";
import {
  type Announcer,
  type AnnouncerStart,
  type HostAnnouncer,
  syncFailed,
} from "../host_announcer.ts";
import { BirdAnnouncer, type BirdClusterSource } from "./announcer.ts";
import { BirdApplier } from "./config_applier.ts";
import { rememberLastApply } from "../last_apply.ts";
import { readyEndpointNodeNames } from "../../../src/kube/endpoint_nodes.ts";
import { hostNodeReady } from "../serving_hold.ts";
import { BIRD_RENDER_USAGE, renderBirdFile } from "./render_file.ts";
import { BirdRoutes } from "./routes.ts";
import { SessionMonitor } from "./session_monitor.ts";
import { LifecycleStage } from "../lifecycle_stage.ts";

/** Options of `startBird`. */
export type BirdOptions = AnnouncerStart;

/**
 * What BIRD reads once the Kubernetes connection exists: Services, Nodes (pod CIDRs, this host's
 * readiness), EndpointSlices (`externalTrafficPolicy: Local`; absent: unknown, as Cluster), and
 * where `AnnouncedByBGP` Events go.
 */
export type BirdClusterContext = ClusterContext;

/** BIRD, as the provider's host side starts it and `keelson render` renders its file. */
export const BIRD: Announcer = {
  name: "bird",
  announce: "bgp",
  start: (options) => startBird(options),
  renderFile: (request, config) => renderBirdFile(request, config),
  render: { usage: BIRD_RENDER_USAGE, flags: ["show-secrets"] },
};

/** The running BIRD side. */
export interface RunningBird extends HostAnnouncer {
  readonly name: "bird";
  announcer: BirdAnnouncer;
  sessions: SessionMonitor;
  /** The Routes capability, when a peer of this host receives pod CIDRs. */
  readonly routes: Routes | undefined;
  /**
   * Calls `listener` when this host's BGP report (`bgp_report.ts`, `bgp_announcements.ts`)
   * changes: BIRD accepted a file announcing another set, a session went up or down at a poll,
   * or BIRD stopped or began answering the polls.
   * @returns unsubscribe
   */
  subscribe(listener: () => void): () => void;
}

const RESYNC_PERIOD_MS = 30_000;

/**
 * `keelson_bgp_vip_announced{vip}`: 1 while this host exports the VIP over an Established
 * session (`keelson_vip_served` counts addresses on the interface, which BGP VIPs are not).
 */
function bgpVipGauge(registry: Registry): Gauge<"vip"> {
  return declareOnce(registry, "keelson_bgp_vip_announced", () =>
    new Gauge({
      name: "keelson_bgp_vip_announced",
      help: "1 while this host announces the VIP over at least one Established BGP session.",
      labelNames: ["vip"],
      registers: [registry],
    }));
}

/** Reason of the Event on a Service whose VIP a host starts announcing over BGP. */
export const ANNOUNCED_BY_BGP_REASON = "AnnouncedByBGP";

/**
 * Starts the BIRD side when the inventory has `[bgp]` and this host is a control-plane machine or
 * serves a BGP pool;
 * otherwise returns undefined.
 * @param options config source, host, registry, signal
 */
export async function startBird(options: BirdOptions): Promise<RunningBird | undefined> {
  const log = logger("bird");
  const config = options.config();
  const bgp = config.bgp;
  if (!bgp) return undefined;
  // the same decision the restart-required diff makes (config/restart_settings.ts)
  if (!runsBird(config, options.host)) {
    log.info(
      "Host {host} is neither a control-plane machine of the inventory nor selected by a BGP " +
        "pool's served_by: not rendering BIRD",
      { host: options.host },
    );
    return undefined;
  }
  const applier = new BirdApplier({
    configFile: bgp.config_file,
    socket: bgp.socket,
    checkCommand: bgp.check_command,
    // the agent stages; the root step (keelson apply-host-config) installs and configures
    stagedFile: stagedPaths(config).bird,
    registry: options.registry,
  });
  // built first, run after: no loop starts and nothing renders before every part exists, so the
  // parts' callbacks below may name each other
  const cp = config.control_plane;
  // only control-plane machines announce the control-plane VIP (model.ts); a worker serving
  // pools has no local apiserver to probe
  const controlPlane = config.machines.some((m) =>
    m.name === options.host && m.role === "control-plane"
  );
  const probe = cp.announce === "bgp" && cp.vip.length > 0 && controlPlane
    ? new ApiserverProbe({
      url: `https://127.0.0.1:${cp.port}/readyz`,
      trackFile: `${config.keepalived.track_file_dir.replace(/\/+$/, "")}/apiserver-health-bgp`,
      intervalMs: cp.health_interval.ms,
      timeoutMs: cp.health_timeout.ms,
    })
    : undefined;
  // the caches and the Event recorder, once connected
  const cluster = new LifecycleStage<BirdClusterContext>();
  // the heartbeat hears of a change of what BIRD announces at once, as of a VRRP change, instead
  // of at its next renewal (5 s, past the leader's 3 s grace for a new VIP)
  // BIRD's share of the data plane: its sessions with what each exports, and its announcements
  // (one per VIP static protocol) with their states, as keepalived reports its instances
  const announcements = new BgpAnnouncementTracker(BIRD.name);
  const share = () => ({
    instances: announcements.read(announcer.configuredModel, sessions),
    sessions: bgpPeerReports(announcer.configuredModel, sessions),
  });
  const report = new ReportChanges(share);
  // the outcome of the last apply, for the heartbeat
  const remembering = rememberLastApply(applier);
  // [bgp] config_file and socket are read only here: BIRD runs with these paths until restarted
  const announcer = new BirdAnnouncer({
    config: options.config,
    configFile: bgp.config_file,
    host: options.host,
    applier: remembering,
    controlPlaneHealthy: () => probe?.state === "healthy",
    healthy: () => hostNodeReady(cluster.current?.nodes, options.host),
    onAnnounced: (service, vips) =>
      cluster.current?.events?.event(
        { kind: "Service", apiVersion: "v1", metadata: { ...service.metadata } },
        "Normal",
        ANNOUNCED_BY_BGP_REASON,
        `Host ${options.host} announces ${vips.join(", ")} over BGP`,
      ),
    onConfigured: () => report.check(),
  });
  const announcedGauge = bgpVipGauge(options.registry);
  const sessions: SessionMonitor = new SessionMonitor({
    // a [bgp] removed at a reload leaves its peers in BIRD (with no routes): keep reading them,
    // so the gauges and the heartbeat say what BIRD has instead of freezing at the last poll
    config: () => announcer.birdConfig() ?? options.config(),
    // not BIRD's own socket, which would let this account reconfigure BIRD: the root step's
    // read-only relay of it (`read_only_relay.ts`)
    socket: daemonPaths(config).birdReadSocket,
    registry: options.registry,
    afterPoll: () => {
      report.check();
      announcedGauge.reset();
      for (const vip of bgpAnnouncedAddresses(report.current().sessions)) {
        announcedGauge.set({ vip }, 1);
      }
    },
  });
  const loops: Promise<void>[] = [];
  if (probe) loops.push(probeLoop(probe, announcer, options));
  const stop = new AbortController();
  loops.push(sessions.run(stop.signal));
  // a periodic render: picks up rotated password files and re-sends configure to a BIRD that
  // was not running at the last change (an unchanged, configured text costs one file read)
  loops.push((async () => {
    while (!options.signal.aborted) {
      await delay(RESYNC_PERIOD_MS, options.signal);
      if (!options.signal.aborted) {
        await announcer.sync("periodic").catch(syncFailed("bird", options.registry));
      }
    }
  })());
  await announcer.sync("startup");
  const routes = bgp.peers.some((p) => p.pod_cidrs)
    ? new BirdRoutes({
      announcer,
      sessions,
      config: options.config,
      // another host's report arrives with its next heartbeat (renewed every 2 s)
      ...(options.reportedRoutes ? { reported: options.reportedRoutes, waitMs: 8000 } : {}),
    })
    : undefined;
  // drain before exit: withdraw, wait for BIRD to have the file, then stop polling; the log says
  // "withdrew" only when BIRD accepted the file announcing no VIP
  const drained = new Promise<void>((resolve) => {
    const drain = async () => {
      try {
        const result = await announcer.drain();
        if (result?.configured) {
          log.info(
            "Withdrew every VIP before stopping: BIRD accepted a file announcing none ({message})",
            { message: result.message },
          );
        } else if (result) {
          log.error(
            "Could not withdraw the VIPs before stopping: BIRD did not take the file announcing " +
              "none ({result}: {message}); the routers keep this host's paths until BIRD's " +
              "sessions close or BIRD takes the file",
            { result: result.result, message: result.message },
          );
        } else {
          log.error(
            "Could not withdraw the VIPs before stopping: no BIRD file could be rendered (see " +
              "the error above); BIRD keeps announcing what it was last given",
          );
        }
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
  const subscribe = (listener: () => void) => report.subscribe(listener);
  const finished = Promise.all([drained, ...loops]).then(() => undefined);
  return {
    name: "bird",
    announcer,
    sessions,
    routes,
    sync: (reason) => announcer.sync(reason),
    connect(context) {
      cluster.begin(context);
      wireCaches(announcer, context, options.host, options.registry);
    },
    subscribe,
    // BIRD's sessions and exported prefixes (`bgp_report.ts`) and its announcements
    // (`bgp_announcements.ts`); changes of what BIRD announces (accepted by BIRD, or a session
    // that went up or down, or BIRD no longer answering) ask for a heartbeat write at once
    dataPlane: {
      snapshot: () => report.current(),
      subscribe,
      lastApply: remembering.last,
    },
    loops: [["BIRD side", finished]],
    finished,
  };
}

async function probeLoop(probe: ApiserverProbe, announcer: BirdAnnouncer, options: BirdOptions) {
  let last = probe.state;
  while (!options.signal.aborted) {
    const state = await probe.tick(options.signal);
    if (state !== last) {
      last = state;
      await announcer.sync(`kube-apiserver is ${state}`).catch(
        syncFailed("bird", options.registry),
      );
    }
    const interval = options.config().control_plane.health_interval.ms;
    await delay(state === "unknown" ? Math.min(interval, 200) : interval, options.signal);
  }
}

/**
 * The Node names of a Service's ready endpoints, from EndpointSlices (`readyEndpointNodeNames`,
 * the reading keepalived's `localTrafficHosts` shares).
 * @returns the names, or undefined while the slice cache has not synced
 */
export function endpointNodeNames(
  slices: Lister<V1EndpointSlice> & { hasSynced(): boolean },
  service: V1Service,
): string[] | undefined {
  if (!slices.hasSynced()) return undefined;
  return readyEndpointNodeNames(slices.list(), service);
}

/**
 * Feeds the announcer from the caches: Services, Nodes (pod CIDRs, this host's readiness) and
 * EndpointSlices (`externalTrafficPolicy: Local`), once Services and Nodes have synced.
 */
function wireCaches(
  announcer: BirdAnnouncer,
  context: BirdClusterContext,
  host: string,
  registry: Registry,
): void {
  const failed = syncFailed("bird", registry);
  const resync = (reason: string) => () => {
    announcer.sync(reason).catch(failed);
  };
  const offs = [
    context.services.subscribe(resync("services changed")),
    context.nodes.subscribe((event) => {
      // only pod CIDRs, addresses and this host's readiness matter; heartbeats do not
      if (
        event.type === "delete" || event.object.metadata?.name === host ||
        podRouteChanged(event.old, event.object)
      ) {
        resync("nodes changed")();
      }
    }),
    ...(context.endpointSlices
      ? [context.endpointSlices.subscribe(resync("endpoints changed"))]
      : []),
  ];
  context.signal.addEventListener("abort", () => offs.forEach((off) => off()), { once: true });
  Promise.all([
    context.services.waitForSync(context.signal),
    context.nodes.waitForSync(context.signal),
  ])
    .then(([a, b]) => {
      if (!a || !b) return;
      return announcer.setClusterSource(birdClusterSource(context));
    }).catch(failed);
}

/**
 * What the announcer reads from the caches: Services, Nodes and, with an EndpointSlice cache,
 * where each Service's ready endpoints run.
 * @param context the caches
 * @returns the announcer's cluster source
 */
export function birdClusterSource(
  context: Pick<BirdClusterContext, "services" | "nodes" | "endpointSlices">,
): BirdClusterSource {
  const slices = context.endpointSlices;
  return {
    services: context.services,
    nodes: context.nodes,
    hasSynced: () => context.services.hasSynced() && context.nodes.hasSynced(),
    ...(slices ? { endpointNodeNames: (service) => endpointNodeNames(slices, service) } : {}),
  };
}

function podRouteChanged(old: V1Node | undefined, node: V1Node): boolean {
  if (!old) return true;
  const key = (n: V1Node) =>
    JSON.stringify([
      n.spec?.podCIDRs ?? n.spec?.podCIDR,
      n.status?.addresses?.filter((a) => a.type === "InternalIP"),
      n.metadata?.deletionTimestamp,
    ]);
  return key(old) !== key(node);
}

/**
 * Tells listeners when a report (its JSON) differs from the one last told; a listener that
 * throws is logged and the others are still told. The report last read is kept: the heartbeat
 * takes it as it is instead of computing it a second time.
 */
class ReportChanges<T> {
  readonly #read: () => T;
  readonly #listeners = new Set<() => void>();
  #last = "";
  #current: { report: T } | undefined;

  /** @param read the report now */
  constructor(read: () => T) {
    this.#read = read;
  }

  /**
   * Calls `listener` after every change found by `check`.
   * @returns unsubscribe
   */
  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  /** @returns the report as last read (read now when never read) */
  current(): T {
    this.#current ??= { report: this.#read() };
    return this.#current.report;
  }

  /** Reads the report and tells the listeners when it changed. */
  check(): void {
    const report = this.#read();
    this.#current = { report };
    const now = JSON.stringify(report);
    if (now === this.#last) return;
    this.#last = now;
    for (const listener of this.#listeners) {
      try {
        listener();
      } catch (error) {
        logger("bird").error("BGP report listener failed: {error}", { error: String(error) });
      }
    }
  }
}
