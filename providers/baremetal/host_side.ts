/**
 * The bare-metal provider's host side: the announcers this host runs (keepalived and, with
 * `[bgp]`, BIRD on control-plane machines), started before any Kubernetes connection exists and
 * fed the caches once it does.
 *
 * @module
 */
import type { Registry } from "prom-client";
import type { Config } from "../../src/config/types.ts";
import { logger } from "../../src/log/logging.ts";
import { type BirdClusterContext, type RunningBird, startBird } from "./bird/start_bird.ts";
import type { HostAnnouncer } from "./host_announcer.ts";
import { startKeepalived } from "./keepalived/start_keepalived.ts";

/** Options of `startHostSide`. */
export interface HostSideOptions {
  config: () => Config;
  /** This host's machine name. */
  host: string;
  registry: Registry;
  signal: AbortSignal;
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
  /** Resolves when every announcer's loops have stopped. */
  readonly finished: Promise<void>;
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
  const bird = await startBird(options);

  const syncAll = async (reason: string) => {
    await Promise.all([...announcers.map((a) => a.sync(reason)), bird?.sync(reason)]);
  };
  return {
    announcers,
    bird,
    sync: syncAll,
    connect(context) {
      const { services, signal } = context;
      bird?.connect(context);
      for (const announcer of announcers) {
        const failed = (error: unknown) =>
          log.error("Rendering {name} failed: {error}", {
            name: announcer.name,
            error: String(error),
          });
        services.subscribe(() => {
          announcer.sync("services changed").catch(failed);
        });
        services.waitForSync(signal).then((ok) => {
          if (!ok) return;
          return announcer.setServiceSource({
            services,
            hasSynced: () => services.hasSynced(),
          });
        }).catch(failed);
      }
    },
    finished: Promise.all([...announcers.map((a) => a.finished), bird?.finished]).then(
      () => undefined,
    ),
  };
}
