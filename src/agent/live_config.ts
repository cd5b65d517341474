/**
 * The configuration in force in a running agent: the file with the command-line flags applied,
 * start-only settings kept at their start values (`RestartRequired`), re-read by the reloader.
 * A rejected reload keeps the last good configuration and holds deletions only
 * (`ReloadDeletionGuard`). Parts built later add what a reload must pass (`addCheck`) and what it
 * must reach (`onChange`) once they exist, so nothing here refers to a part not yet built.
 *
 * @module
 */
import type { Registry } from "prom-client";
import { ConfigError, type ConfigIssue } from "../config/config_error.ts";
import { validateConfig } from "../config/parse_config.ts";
import { ConfigReloader } from "../config/reloader.ts";
import { RestartRequired } from "../config/restart_required.ts";
import type { Config } from "../config/types.ts";
import { ReloadDeletionGuard } from "../controllers/node_lifecycle/deletion_guards.ts";

/** Options of `LiveConfig`. */
export interface LiveConfigOptions {
  configPath: string;
  /** The validated configuration at start, with the flag overrides applied. */
  config: Config;
  /** Applies the flag overrides to a reloaded configuration. */
  applyFlags: (config: Config) => Config;
  /** This host's machine name (start-only settings it reads). */
  host: string;
  /** Where the reload and restart-required gauges are registered. */
  registry: Registry;
  /** The digest of the file `config` was read from (`loadInventory`). @default unknown */
  inventorySha256?: string;
}

/**
 * Checks a reloaded configuration (flags applied, validated) against the one in force.
 * @returns the issues that reject the reload; none to accept it
 */
export type ReloadCheck = (next: Config, inForce: Config) => ConfigIssue[];

/** The configuration in force, and its reloads. */
export class LiveConfig {
  /** Re-reads the file (run it once the parts its changes reach exist). */
  readonly reloader: ConfigReloader;
  /** Start-only settings the file changed since start. */
  readonly restart: RestartRequired;
  /** Holds deletions after a rejected reload. */
  readonly guard: ReloadDeletionGuard;
  #config: Config;
  #checks: ReloadCheck[] = [];
  #listeners: ((reason: string) => void | Promise<void>)[] = [];

  /** @param options the file, the start configuration, the flags, this host and the registry */
  constructor(options: LiveConfigOptions) {
    const { configPath, applyFlags } = options;
    this.#config = options.config;
    // settings read only at start keep their start values; a file changing them says so
    this.restart = new RestartRequired({
      running: options.config,
      host: options.host,
      registry: options.registry,
    });
    this.reloader = new ConfigReloader(configPath, options.config, {
      registry: options.registry,
      apply: applyFlags,
      ...(options.inventorySha256 ? { initialSha256: options.inventorySha256 } : {}),
      // the file with the flags applied must validate, and pass every check added
      validate: (next) => {
        try {
          const applied = validateConfig(
            applyFlags(next),
            `${configPath} with the command-line flags`,
          );
          return this.#checks.flatMap((check) => check(applied, this.#config));
        } catch (error) {
          if (error instanceof ConfigError) return error.issues;
          throw error;
        }
      },
      onChange: (next) => this.#apply(applyFlags(next)),
    });
    this.guard = new ReloadDeletionGuard({
      lastReloadSucceeded: () => this.reloader.lastReloadSucceeded(),
    });
    this.guard.onConfig(this.#config);
  }

  /** @returns the configuration in force */
  current(): Config {
    return this.#config;
  }

  /** @returns false after a rejected reload, until one is accepted */
  lastReloadSucceeded(): boolean {
    return this.reloader.lastReloadSucceeded();
  }

  /**
   * Adds a check every later reload must pass.
   * @param check returns the issues that reject a reload
   */
  addCheck(check: ReloadCheck): void {
    this.#checks.push(check);
  }

  /**
   * Calls `listener` after each accepted change, once the new configuration is in force; the
   * listeners run one after the other, in the order they were added.
   * @param listener told the reason ("configuration reloaded")
   * @returns removes the listener
   */
  onChange(listener: (reason: string) => void | Promise<void>): () => void {
    this.#listeners.push(listener);
    return () => {
      this.#listeners = this.#listeners.filter((l) => l !== listener);
    };
  }

  async #apply(next: Config): Promise<void> {
    this.#config = this.restart.update(next);
    this.guard.onConfig(this.#config);
    for (const listener of [...this.#listeners]) await listener("configuration reloaded");
  }
}
