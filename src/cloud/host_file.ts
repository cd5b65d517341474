/**
 * `keelson render`'s view of a provider (Keelson extension): the file one of its announcers would
 * keep on one host, rendered offline by the pipeline the running announcer applies, from the
 * inventory and a cluster snapshot instead of the caches.
 *
 * @module
 */
import type { V1EndpointSlice, V1Node, V1Service } from "@kubernetes/client-node";

/** A cluster snapshot's objects, and the file they were read from (for messages). */
export interface SnapshotObjects {
  file: string;
  services: readonly V1Service[];
  nodes: readonly V1Node[];
  endpointSlices: readonly V1EndpointSlice[];
}

/** Which file to render, for which host, from what. */
export interface HostFileRequest {
  /** The announcer whose file it is, e.g. `keepalived`, `bird`. */
  announcer: string;
  /** The machine's name. */
  host: string;
  /** The inventory file, named in messages. */
  configFile: string;
  /** The cluster; absent: the inventory alone. */
  snapshot?: SnapshotObjects;
  /** Print secrets (e.g. BGP passwords) instead of a placeholder. @default false */
  showSecrets?: boolean;
  /** The user `keelson run` runs as, where the file names one. */
  runAsUser?: string;
}

/**
 * A flag `keelson render NAME` takes beyond `--config`, `--state` and `--host`: `fifo-user` sets
 * `runAsUser`, `show-secrets` sets `showSecrets`.
 */
export type HostFileFlag = "fifo-user" | "show-secrets";

/** How `keelson render NAME` renders one announcer's file, as its provider describes it. */
export interface HostFileCommand {
  /** The announcer, the NAME of `keelson render NAME`. */
  announcer: string;
  /** The help text of `keelson render NAME`. */
  usage: string;
  /** The flags it takes beyond `--config`, `--state` and `--host`. */
  flags: readonly HostFileFlag[];
}

/**
 * The file's text with notes for the operator (what was left out and why), or why it cannot be
 * rendered; `usage`: a wrong command-line value (exit 2), not a wrong input file.
 */
export type HostFileResult =
  | { text: string; notes: string[] }
  | { error: string; usage?: boolean };

/** Which staged host files the root step installs (`keelson apply-host-config`). */
export interface StagedApplyRequest {
  /** The machine's name. */
  host: string;
  /** The user `keelson run` runs as, where a file names one (keepalived's notify FIFO). */
  agentUser: string;
  /** The announcers whose files to install; absent: every one. */
  announcers?: readonly string[];
}

/** What the root step serves the agent (`serveHostReaders`). */
export interface HostReadersRequest {
  /** The machine's name. */
  host: string;
  /** The announcers to serve; absent: every one. */
  announcers?: readonly string[];
  /** Stops serving. */
  signal: AbortSignal;
}

/** What the root step did with one announcer's staged file. */
export interface StagedApplyOutcome {
  /** The announcer, e.g. `keepalived`, `bird`. */
  announcer: string;
  /**
   * `installed` judged, checked, written and the daemon told; `not_running` installed, but no
   * daemon runs to tell (it reads the file at start); `unchanged` already handled;
   * `nothing-staged`; `refused` not Keelson's rendering; `invalid` the daemon's check refused it;
   * `error` anything else (e.g. written, but BIRD not told).
   */
  result:
    | "installed"
    | "not_running"
    | "unchanged"
    | "nothing-staged"
    | "refused"
    | "invalid"
    | "error";
  /** One sentence for the journal (never the staged text). */
  message: string;
}
