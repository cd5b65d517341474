/**
 * The bare-metal provider's host side: the announcers this host runs (keepalived on
 * control-plane machines; BIRD joins the list), started before any Kubernetes connection exists
 * and fed the Service cache once it does.
 *
 * @module
 */
import type { V1Service } from "@kubernetes/client-node";
import type { Registry } from "prom-client";
import type { Config } from "../../src/config/types.ts";
import type { Informer } from "../../src/kube/ports.ts";
import { logger } from "../../src/log/logging.ts";
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
  /** Follows the Service cache: every change re-renders; once synced it replaces the file's VIPs. */
  connect(services: Informer<V1Service>, signal: AbortSignal): void;
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

  const syncAll = async (reason: string) => {
    await Promise.all(announcers.map((a) => a.sync(reason)));
  };
  return {
    announcers,
    sync: syncAll,
    connect(services, signal) {
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
    finished: Promise.all(announcers.map((a) => a.finished)).then(() => undefined),
  };
}
