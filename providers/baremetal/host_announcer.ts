/**
 * The announcer contract: what keepalived (VRRP) and BIRD (BGP) both implement, so the host side
 * (`host_side.ts`) and the registry entry (`mod.ts`) treat them alike. An announcer is started
 * on a host that runs it, renders its daemon's file from the inventory and the caches, applies
 * it, follows the caches once connected, tells its share of the host's data plane, and stops
 * with the host side's signal. Offline, it renders the same file from a snapshot for
 * `keelson render`. Which announcer serves an address is the pools' decision
 * (`ipam/address_owner.ts`), never one announcer's question to the other.
 *
 * @module
 */
import type { V1Service } from "@kubernetes/client-node";
import { Counter, type Registry } from "prom-client";
import type {
  HostFileCommand,
  HostFileRequest,
  HostFileResult,
} from "../../src/cloud/host_file.ts";
import type { ApplyState, DataPlaneSnapshot } from "../../src/cloud/host_data_plane.ts";
import type { ClusterContext, Route, Routes } from "../../src/cloud/provider.ts";
import type { Config } from "../../src/config/types.ts";
import type { Lister } from "../../src/kube/ports.ts";
import { errorMessage } from "../../src/log/error_message.ts";
import { logger } from "../../src/log/logging.ts";
import { declareOnce } from "../../src/metrics/registry.ts";

/** Where an announcer reads Services from, once a Kubernetes connection exists. */
export interface ServiceSource {
  services: Lister<V1Service>;
  hasSynced(): boolean;
}

/** What an announcer is started with. */
export interface AnnouncerStart {
  /** The configuration in force. */
  config: () => Config;
  /** This host's machine name. */
  host: string;
  registry: Registry;
  /** Stops the announcer's loops (it withdraws what it must before they end). */
  signal: AbortSignal;
  /** Routes other hosts report announced (heartbeats), for a Routes capability. */
  reportedRoutes?: () => Route[];
}

/** An announcer's share of this host's data plane. */
export interface AnnouncerDataPlane {
  /** @returns its part of the snapshot */
  snapshot(): Partial<DataPlaneSnapshot>;
  /**
   * Calls `listener` after every change of its part.
   * @returns unsubscribe
   */
  subscribe(listener: () => void): () => void;
  /** @returns the outcome of its last config apply (`none` before the first) */
  lastApply(): ApplyState;
}

/** One announcer, running on this host. */
export interface HostAnnouncer {
  /** The daemon, for logs (`keepalived`, `bird`). */
  readonly name: string;
  /**
   * Renders and applies now (the inventory or the caches changed). Before the caches have synced
   * it keeps the Service addresses it already announces.
   * @param reason for the log
   */
  sync(reason: string): Promise<unknown>;
  /** Follows the caches (they may not have synced yet): every change re-renders. */
  connect(context: ClusterContext): void;
  /** Its share of the host's data plane. */
  readonly dataPlane?: AnnouncerDataPlane;
  /** The Routes capability it answers, when it has one. */
  readonly routes?: Routes;
  /**
   * Its loops, each named for the message when one stops before the stop signal (e.g.
   * `keepalived side`).
   */
  readonly loops: readonly (readonly [string, Promise<unknown>])[];
  /** Resolves when every loop has stopped (after the signal aborts). */
  readonly finished: Promise<void>;
}

/** An announcer as the provider knows it: how to start it and the file it renders. */
export interface Announcer {
  /** The daemon (`keepalived`, `bird`): the name `keelson render` takes. */
  readonly name: string;
  /** What it announces with: VRRP (keepalived) or BGP (BIRD), the pools' `announce`. */
  readonly announce: "vrrp" | "bgp";
  /**
   * Starts it, rendered once before this returns, when this host runs it.
   * @returns the running announcer, or undefined (logged why) when this host does not run it
   */
  start(options: AnnouncerStart): Promise<HostAnnouncer | undefined>;
  /**
   * One host's file from the inventory and a snapshot, by the pipeline the running announcer
   * applies (`keelson render`). Offline: writes nothing.
   * @param request the host, snapshot and options
   * @param config the validated inventory
   */
  renderFile(request: HostFileRequest, config: Config): Promise<HostFileResult>;
  /** `keelson render NAME`'s help text and the flags it takes for this announcer. */
  readonly render: Omit<HostFileCommand, "announcer">;
}

/** Counts syncs that threw, per announcer. */
export const SYNC_FAILURES_METRIC = "keelson_announcer_sync_failures_total";

/**
 * What a sync that threw is told to, for every announcer alike: one error line naming the
 * announcer, and `keelson_announcer_sync_failures_total{announcer}` counted. A render that fails
 * on its inputs returns an error the announcer logs itself; an apply's outcome is counted by its
 * applier.
 * @param name the announcer
 * @param registry where the counter is declared
 * @returns the handler for a rejected `sync`
 */
export function syncFailed(name: string, registry: Registry): (error: unknown) => void {
  const log = logger("agent");
  const failures = declareOnce(registry, SYNC_FAILURES_METRIC, () =>
    new Counter({
      name: SYNC_FAILURES_METRIC,
      help: "Renders of an announcer's file (keepalived, BIRD) that failed with an error",
      labelNames: ["announcer"],
      registers: [registry],
    }));
  failures.inc({ announcer: name }, 0);
  return (error) => {
    failures.inc({ announcer: name });
    log.error("Rendering {name} failed: {error}", { name, error: errorMessage(error) });
  };
}
