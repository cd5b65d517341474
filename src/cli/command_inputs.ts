/**
 * The inputs the offline commands (`plan`, `render`) read, with their failures reported the same
 * way: the problems on stderr and `undefined`, so the command exits 1 without a stack trace.
 *
 * @module
 */
import { ConfigError } from "../config/config_error.ts";
import { loadConfigFile } from "../config/load_config.ts";
import type { Config } from "../config/types.ts";
import { loadSnapshot, type Snapshot } from "../snapshot/load_snapshot.ts";
import { printError } from "./output.ts";
import { errorMessage } from "../log/error_message.ts";

/**
 * Loads and validates the inventory.
 * @param path the `--config` file
 * @returns the configuration, or undefined after printing every problem
 */
export async function readInventory(path: string): Promise<Config | undefined> {
  try {
    return await loadConfigFile(path);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    printError(`${error.format()}\n${path}: the inventory is not valid; run keelson check`);
    return undefined;
  }
}

/**
 * Loads a cluster snapshot (`kubectl get ... -o yaml|json`).
 * @param path the `--state` file
 * @returns the snapshot, or undefined after printing why it cannot be read
 */
export async function readSnapshot(path: string): Promise<Snapshot | undefined> {
  try {
    return await loadSnapshot(path);
  } catch (error) {
    printError(errorMessage(error));
    return undefined;
  }
}
