/**
 * Where the unprivileged agent stages the files the root step installs: a directory of its own
 * under `[keepalived] track_file_dir` (which it owns already, for the track files and the notify
 * FIFO). The root step reads only these names, derived from the inventory root owns, so the
 * account cannot point it anywhere else.
 *
 * @module
 */
import { join } from "node:path";
import type { Config } from "./types.ts";

/** The staging directory's name inside `track_file_dir`. */
export const STAGE_DIR_NAME = "stage";

/** The staged files of one host. */
export interface StagedPaths {
  /** The directory (mode 0700, the agent's). */
  dir: string;
  /** keepalived's file, as the agent rendered it. */
  keepalived: string;
  /** BIRD's file, as the agent rendered it (it may hold TCP-MD5 passwords). */
  bird: string;
}

/**
 * The staging paths an inventory implies.
 * @param config the validated inventory
 * @returns the directory and the two files
 */
export function stagedPaths(config: Config): StagedPaths {
  const dir = join(config.keepalived.track_file_dir, STAGE_DIR_NAME);
  return { dir, keepalived: join(dir, "keepalived.conf"), bird: join(dir, "bird.conf") };
}
