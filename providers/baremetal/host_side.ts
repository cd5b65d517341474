/**
 * The bare-metal provider's host side: the announcers this host runs (keepalived and, with
 * `[bgp]`, BIRD on control-plane machines), started before any Kubernetes connection exists and
 * fed the caches once it does.
 *
 * @module
 */
import type { V1Service } from "@kubernetes/client-node";
import type { Registry } from "prom-client";
import type { Config } from "../../src/config/types.ts";
import type { Informer } from "../../src/kube/ports.ts";
import { errorMessage } from "../../src/log/error_message.ts";
import { logger } from "../../src/log/logging.ts";
import { bgpPeerReports } from "./bird/bgp_report.ts";
import { type BirdClusterContext, type RunningBird, startBird } from "./bird/start_bird.ts";
import type { HostDataPlane } from "../../src/cloud/host_data_plane.ts";
import type { Route } from "../../src/cloud/provider.ts";
import { handlesService } from "../../src/cloud/load_balancer_class.ts";
import { canonicalIp } from "../../src/net/ip.ts";
import type { HostAnnouncer } from "./host_announcer.ts";
import { readInterfaceAddresses } from "./keepalived/interface_addresses.ts";
import { NOTIFY_FIFO_FILE } from "./keepalived/model.ts";
import { type RunningKeepalived, startKeepalived } from "./keepalived/start_keepalived.ts";
import { VrrpStateTracker } from "./keepalived/vrrp_state.ts";

/** Options of `startHostSide`. */
export interface HostSideOptions {
  config: () => Config;
  /** This host's machine name. */
  host: string;
  registry: Registry;
  signal: AbortSignal;
  /** Routes other hosts report announced (heartbeats), for BIRD's Routes capability. */
  reportedRoutes?: () => Route[];
}

/** The running host side. */
export interface HostSide {
  /** The announcers this host runs (empty on a host that announces nothing). */
  readonly announcers: readonly HostAnnouncer[];
  /** Renders and applies every announcer (a reload). */
  sync(reason: string): Promise<void>;
  /**
   * Follows the caches: every change re-renders; once synced they replace the files' VIPs. BIRD
   * also reads Nodes (pod CIDRs, this host's readiness) and EndpointSlices.
   */
  connect(context: BirdClusterContext): void;
  /** The BIRD side, when this host runs it. */
  readonly bird: RunningBird | undefined;
  /**
   * This host's VRRP states, served VIPs and BGP sessions; undefined when neither keepalived nor
   * BIRD runs here.
   */
  readonly dataPlane?: HostDataPlane;
  /** Resolves when every announcer's loops have stopped. */
  readonly finished: Promise<void>;
  /** Resolves with what happened when a part stopped before the stop signal. */
  readonly stopped: Promise<Error>;
}

/**
 * Starts the announcers this host runs, each rendered once before this returns.
 * @param options configuration source, host, metrics registry, stop signal
 * @returns the host side
 */
export async function startHostSide(options: HostSideOptions): Promise<HostSide> {
  const log = logger("agent");
  const announcers: HostAnnouncer[] = [];
  const keepalived = await startKeepalived(options);
  if (keepalived) announcers.push(keepalived);
  let services: Informer<V1Service> | undefined;
  const tracked = keepalived ? trackDataPlane(keepalived, options, () => services) : undefined;
  const bird = await startBird(options);
  const dataPlane = composeDataPlane(tracked?.dataPlane, bird);

  const syncAll = async (reason: string) => {
    await Promise.all([...announcers.map((a) => a.sync(reason)), bird?.sync(reason)]);
  };
  return {
    announcers,
    bird,
    sync: syncAll,
    ...(dataPlane ? { dataPlane } : {}),
    connect(context) {
      const { services: informer, signal } = context;
      services = informer;
      bird?.connect(context);
      for (const announcer of announcers) {
        const failed = (error: unknown) =>
          log.error("Rendering {name} failed: {error}", {
            name: announcer.name,
            error: String(error),
          });
        informer.subscribe(() => {
          announcer.sync("services changed").catch(failed);
        });
        informer.waitForSync(signal).then((ok) => {
          if (!ok) return;
          return announcer.setServiceSource({
            services: informer,
            hasSynced: () => informer.hasSynced(),
          });
        }).catch(failed);
      }
    },
    finished: Promise.all([
      ...announcers.map((a) => a.finished),
      tracked?.finished,
      bird?.finished,
    ]).then(
      () => undefined,
    ),
    stopped: firstEarlyStop([
      ...announcers.map((a) => [`${a.name} side`, a.finished] as const),
      ["VRRP state tracker (notify FIFO, interface addresses)", tracked?.finished],
      ["BIRD side", bird?.finished],
    ], options.signal),
  };
}

/**
 * The first part that ends before `signal` aborts: its loops returned or one of them threw.
 * @param parts each part's name and the promise that settles when its loops have stopped
 * @param signal the host side's stop signal
 * @returns resolves with an Error naming the part (never resolves when every part waits for
 *   the signal)
 */
export function firstEarlyStop(
  parts: readonly (readonly [string, Promise<unknown> | undefined])[],
  signal: AbortSignal,
): Promise<Error> {
  return new Promise((resolve) => {
    for (const [name, finished] of parts) {
      finished?.then(
        () => {
          if (!signal.aborted) resolve(new Error(`Keelson's ${name} stopped on its own`));
        },
        (error: unknown) => {
          if (!signal.aborted) {
            resolve(
              new Error(`Keelson's ${name} stopped: ${errorMessage(error)}`, { cause: error }),
            );
          }
        },
      );
    }
  });
}

/**
 * Adds BIRD's sessions and exported prefixes (`bgp_report.ts`) to keepalived's data plane.
 * @param vrrp keepalived's data plane, when it runs here
 * @param bird the BIRD side, when it runs here
 * @returns the combined data plane, or undefined when neither runs
 */
function composeDataPlane(
  vrrp: HostDataPlane | undefined,
  bird: RunningBird | undefined,
): HostDataPlane | undefined {
  if (!bird) return vrrp;
  return {
    snapshot: () => ({
      ...(vrrp?.snapshot() ?? { instances: [], vips: [] }),
      bgp: bgpPeerReports(bird.announcer.configuredModel, bird.sessions),
    }),
    // VRRP changes and a change of what BIRD announces (accepted by BIRD, or a session that went
    // up or down) each ask for a heartbeat write at once
    subscribe: (listener) => {
      const offs = [vrrp?.subscribe(listener), bird.subscribe(listener)];
      return () => offs.forEach((off) => off?.());
    },
    lastApply: () => vrrp?.lastApply() ?? "none",
  };
}

/**
 * Follows keepalived's notify FIFO and the interface's addresses (`vrrp_state.ts`).
 * @param keepalived the running keepalived side
 * @param options configuration, registry and signal
 * @param services the Service cache once connected (for the `service` label)
 * @returns the data plane and the tracker's loop
 */
function trackDataPlane(
  keepalived: RunningKeepalived,
  options: HostSideOptions,
  services: () => Informer<V1Service> | undefined,
): { dataPlane: HostDataPlane; finished: Promise<void> } {
  // start-only settings (config/restart_settings.ts): read once, as startKeepalived does
  const { track_file_dir: trackDir, config_file: configFile } = options.config().keepalived;
  const dir = trackDir.replace(/\/+$/, "");
  const tracker = new VrrpStateTracker({
    registry: options.registry,
    interface: () => options.config().keepalived.interface,
    ...(keepalived.notifyFifo ? { fifoPath: `${dir}/${NOTIFY_FIFO_FILE}` } : {}),
    configFile: () => configFile,
    servicesOf: (vip) => {
      const keys: string[] = [];
      for (const s of services()?.list() ?? []) {
        if (!handlesService(options.config(), s)) continue;
        const ips = (s.status?.loadBalancer?.ingress ?? []).map((i) => canonicalIp(i.ip ?? ""));
        if (ips.includes(vip)) keys.push(`${s.metadata?.namespace}/${s.metadata?.name}`);
      }
      return keys.sort();
    },
    readAddresses: (iface) => readInterfaceAddresses({ interface: iface }),
    onKeepalivedStarted: () => keepalived.onStarted(),
  });
  return {
    dataPlane: {
      snapshot: () => tracker.snapshot(),
      subscribe: (listener) => tracker.subscribe(listener),
      lastApply: () => keepalived.lastApply(),
    },
    finished: tracker.run(options.signal),
  };
}
