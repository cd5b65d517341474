/**
 * Reading the configuration file from disk, and the files it names.
 *
 * @module
 */
import { writePathIssues } from "./baked_permissions.ts";
import { readBgpSecrets } from "./bgp_secrets.ts";
import { ConfigError } from "./config_error.ts";
import { namedFileIssues } from "./named_files.ts";
import { formatPath, indexLines, locateLine } from "./source_lines.ts";
import { parseConfig } from "./parse_config.ts";
import { readInputFile } from "../files/read_input_file.ts";
import type { Config } from "./types.ts";
import { errorMessage } from "../log/error_message.ts";

/** Options of `loadConfigFile`. */
export interface LoadConfigOptions {
  /**
   * Also read every file the agent reads besides the inventory (`named_files.ts`): `check`,
   * `run` and reloads. `plan`, `render` and `status` may run where those files are not.
   */
  namedFiles?: boolean;
  /** `run`'s command-line overrides: a file a flag replaces is not checked as the inventory's. */
  apply?: (config: Config) => Config;
}

/**
 * Reads and validates a configuration file: the text (`parseConfig`), the paths Keelson would
 * write (`baked_permissions.ts`) and the BGP password files.
 * @param path the file, as the user named it (issues quote it unchanged)
 * @param options whether to read the files the agent reads too
 * @returns the validated config
 * @throws {ConfigError} when the file cannot be read (naming the OS reason) or does not validate,
 *   or a file it names cannot be used
 * @example
 * ```ts
 * const config = await loadConfigFile("deploy/examples/keelson.toml");
 * ```
 */
export async function loadConfigFile(
  path: string,
  options: LoadConfigOptions = {},
): Promise<Config> {
  return (await loadInventory(path, options)).config;
}

/** A validated inventory and the digest of the bytes it was read from. */
export interface LoadedInventory {
  config: Config;
  /**
   * SHA-256 of the file's bytes, lowercase hex: what `sha256sum FILE` prints. Every host
   * running the same file has the same digest, whatever Keelson version parses it.
   */
  sha256: string;
}

/**
 * `loadConfigFile`, with the digest of the file's bytes (`LoadedInventory.sha256`).
 * @param path the file
 * @param options as `loadConfigFile`
 * @returns the validated config and its digest
 * @throws {ConfigError} as `loadConfigFile`
 */
export async function loadInventory(
  path: string,
  options: LoadConfigOptions = {},
): Promise<LoadedInventory> {
  const text = await readConfigText(path);
  const sha256 = await inventoryDigest(text);
  const config = parseConfig(text, path);
  // secrets live in their own files; a file that cannot be rendered fails the load like a bad key;
  // a path the binary may not write would fail only on the host, at the first write
  const issues = [...writePathIssues(config), ...(await readBgpSecrets(config)).issues];
  if (options.namedFiles) {
    issues.push(...await namedFileIssues(config, options.apply?.(config) ?? config));
  }
  if (issues.length > 0) {
    const index = indexLines(text);
    const located = issues.map((issue) => {
      const line = locateLine(index, issue.path);
      return {
        file: path,
        ...(line !== undefined ? { line } : {}),
        path: formatPath(issue.path),
        message: issue.message,
      };
    });
    // file order, as parseConfig lists its issues
    located.sort((a, b) => (a.line ?? Infinity) - (b.line ?? Infinity));
    throw new ConfigError(located);
  }
  return { config, sha256 };
}

/**
 * The digest of an inventory's text as read from its file (UTF-8: the file's own bytes).
 * @param text the file's text
 * @returns SHA-256, lowercase hex
 */
export async function inventoryDigest(text: string): Promise<string> {
  const hash = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(hash), (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Reads the file's text, turning any failure into a one-issue `ConfigError`.
 * @param path the file
 * @returns its text
 * @throws {ConfigError} when it cannot be read
 */
export async function readConfigText(path: string): Promise<string> {
  try {
    return await readInputFile(path);
  } catch (error) {
    throw new ConfigError([{
      file: path,
      path: "",
      message: `Cannot read the configuration file: ${errorMessage(error)}`,
    }], { cause: error });
  }
}
