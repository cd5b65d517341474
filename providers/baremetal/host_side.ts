/**
 * The bare-metal provider's host side: the announcers this host runs (keepalived and, with
 * `[bgp]`, BIRD on control-plane machines, each through the contract of `host_announcer.ts`),
 * started before any Kubernetes connection exists and fed the caches once it does.
 *
 * @module
 */
import type { HostDataPlane } from "../../src/cloud/host_data_plane.ts";
import type { ClusterContext, Routes } from "../../src/cloud/provider.ts";
import { errorMessage } from "../../src/log/error_message.ts";
import { BIRD } from "./bird/start_bird.ts";
import type { Announcer, AnnouncerStart, HostAnnouncer } from "./host_announcer.ts";
import { KEEPALIVED } from "./keepalived/start_keepalived.ts";

/** The announcers of the bare-metal provider, in the order they start. */
export const ANNOUNCERS: readonly Announcer[] = [KEEPALIVED, BIRD];

/** Options of `startHostSide`. */
export type HostSideOptions = AnnouncerStart;

/** The running host side. */
export interface HostSide {
  /** The announcers this host runs (empty on a host that announces nothing). */
  readonly announcers: readonly HostAnnouncer[];
  /** Renders and applies every announcer (a reload). */
  sync(reason: string): Promise<void>;
  /** Follows the caches: every change re-renders; once synced they replace the files' VIPs. */
  connect(context: ClusterContext): void;
  /** The Routes capability of the announcer that answers one here (BIRD), if any. */
  readonly routes: Routes | undefined;
  /**
   * This host's announcements with their states (VRRP and BGP), served VIPs and routing
   * sessions; undefined when no announcer runs here.
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
 * @param announcers the announcers to start. @default ANNOUNCERS
 * @returns the host side
 */
export async function startHostSide(
  options: HostSideOptions,
  announcers: readonly Announcer[] = ANNOUNCERS,
): Promise<HostSide> {
  const running: HostAnnouncer[] = [];
  for (const announcer of announcers) {
    const started = await announcer.start(options);
    if (started) running.push(started);
  }
  const dataPlane = composeDataPlane(running);
  return {
    announcers: running,
    routes: running.find((a) => a.routes)?.routes,
    async sync(reason) {
      await Promise.all(running.map((a) => a.sync(reason)));
    },
    ...(dataPlane ? { dataPlane } : {}),
    connect(context) {
      for (const announcer of running) announcer.connect(context);
    },
    finished: Promise.all(running.map((a) => a.finished)).then(() => undefined),
    stopped: firstEarlyStop(running.flatMap((a) => a.loops), options.signal),
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
 * The host's data plane from each announcer's share: every announcer's instances (keepalived's
 * VRRP instances, BIRD's VIP static protocols), keepalived's VIPs, BIRD's sessions and exported
 * prefixes.
 * @param announcers the running announcers
 * @returns the combined data plane, or undefined when no announcer runs here
 */
function composeDataPlane(announcers: readonly HostAnnouncer[]): HostDataPlane | undefined {
  const shares = announcers.flatMap((a) => a.dataPlane ? [[a.name, a.dataPlane] as const] : []);
  const parts = shares.map(([, part]) => part);
  if (parts.length === 0) return undefined;
  return {
    snapshot: () => {
      const now = parts.map((p) => p.snapshot());
      const sessions = now.flatMap((s) => s.sessions ? [s.sessions] : []);
      return {
        instances: now.flatMap((s) => s.instances ?? []),
        vips: now.flatMap((s) => s.vips ?? []),
        ...(sessions.length > 0 ? { sessions: sessions.flat() } : {}),
      };
    },
    // every change of a share asks for a heartbeat write at once
    subscribe: (listener) => {
      const offs = parts.map((p) => p.subscribe(listener));
      return () => offs.forEach((off) => off());
    },
    // each announcer's own outcome under its name: a file BIRD refused is reported as BIRD's
    applies: () => shares.map(([announcer, part]) => ({ announcer, result: part.lastApply() })),
  };
}
