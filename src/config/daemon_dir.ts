/**
 * The directory where root's side hands the unprivileged agent what it may read but never replace:
 * keepalived's VRRP notify FIFO (keepalived makes it) and the root step's read-only BIRD socket
 * (`keelson apply-host-config --watch` serves it). It is the sibling `<track_file_dir>-daemons`
 * (`/run/keelson-daemons` by default), root's with group keelson (keelson.tmpfiles), not a
 * directory below `track_file_dir`: the account owns that one and could rename or replace
 * whatever root made in it, so that root's keepalived would open, or change the owner of, a file
 * the account chose.
 *
 * @module
 */
import { join } from "node:path";
import type { Config } from "./types.ts";

/** What follows `track_file_dir` in the directory's name. */
export const DAEMONS_DIR_SUFFIX = "-daemons";
/** keepalived's notify FIFO's name in it. */
export const NOTIFY_FIFO_NAME = "keepalived-notify.fifo";
/** The root step's read-only BIRD socket's name in it. */
export const BIRD_READ_SOCKET_NAME = "bird-ro.ctl";

/** The daemon-side paths of one host. */
export interface DaemonPaths {
  /** `<track_file_dir>-daemons`: root's, group keelson may enter (mode 2750). */
  dir: string;
  /** keepalived's VRRP notify FIFO (`vrrp_notify_fifo`). */
  notifyFifo: string;
  /** The root step's read-only relay of BIRD's control socket. */
  birdReadSocket: string;
}

/**
 * The daemon directory beside a `track_file_dir`.
 * @param trackFileDir `[keepalived] track_file_dir`, e.g. `/run/keelson`
 * @returns e.g. `/run/keelson-daemons`
 */
export function daemonsDir(trackFileDir: string): string {
  const trimmed = trackFileDir.replace(/\/+$/, "");
  return `${trimmed === "" ? "/keelson" : trimmed}${DAEMONS_DIR_SUFFIX}`;
}

/**
 * The daemon-side paths an inventory implies.
 * @param config the validated inventory
 * @returns the directory, the FIFO and the socket
 */
export function daemonPaths(config: Pick<Config, "keepalived">): DaemonPaths {
  const dir = daemonsDir(config.keepalived.track_file_dir);
  return {
    dir,
    notifyFifo: join(dir, NOTIFY_FIFO_NAME),
    birdReadSocket: join(dir, BIRD_READ_SOCKET_NAME),
  };
}
