/**
 * The provider registry: providers register a factory under their name; `run` builds the one the
 * configuration names.
 *
 * @module
 */
import type { V1Service } from "@kubernetes/client-node";
import type { Registry } from "prom-client";
import type { Config } from "../config/types.ts";
import type { HostFileCommand } from "./host_file.ts";
import type { CloudProvider } from "./provider.ts";

/** Builds a provider from the validated configuration. */
export type ProviderFactory = (config: Config) => CloudProvider;

/**
 * What can be read of a provider's records on the cluster's objects without building the
 * provider (no inventory needed), e.g. by `keelson status`.
 */
export interface ProviderRecords {
  /**
   * The pool a Service's addresses came from, as the provider recorded it on the Service.
   * @returns the pool name as written (unvalidated: escape it before printing), or undefined
   */
  recordedPool?(service: V1Service): string | undefined;
  /** The host files `keelson render` renders for it, one per announcer. @default none */
  hostFiles?: readonly HostFileCommand[];
}

/** What the process hands every provider it registers. */
export interface ProviderInputs {
  /**
   * The configuration in force and whether it is usable (false after a rejected reload).
   * @default the Config given to the factory, always usable
   */
  inventory?: () => { config: Config; healthy: boolean };
  /** Where the provider's metrics go. @default not exported */
  metrics?: Registry;
}

/** A name → factory map; one per process, passed around rather than global. */
export class ProviderRegistry {
  #factories = new Map<string, ProviderFactory>();
  #records = new Map<string, ProviderRecords>();

  /**
   * Registers a factory.
   * @param name the `[cluster] provider` value that selects it
   * @param factory builds the provider
   * @param records how its records are read without building it. @default none
   * @throws {Error} when the name is already taken
   */
  register(name: string, factory: ProviderFactory, records: ProviderRecords = {}): void {
    if (this.#factories.has(name)) {
      throw new Error(`Cannot register provider "${name}": the name is already registered`);
    }
    this.#factories.set(name, factory);
    this.#records.set(name, records);
  }

  /**
   * The host files of every registered provider, by provider name then in each one's order.
   * @returns the commands of `keelson render`
   */
  hostFileCommands(): HostFileCommand[] {
    return this.names().flatMap((name) => [...(this.#records.get(name)?.hostFiles ?? [])]);
  }

  /**
   * The pool a Service's addresses came from, as the first registered provider (by name) that
   * recorded one says.
   * @param service the Service
   * @returns the pool name as written (unvalidated), or undefined
   */
  recordedPool(service: V1Service): string | undefined {
    for (const name of this.names()) {
      const pool = this.#records.get(name)?.recordedPool?.(service);
      if (pool !== undefined) return pool;
    }
    return undefined;
  }

  /** The registered names, sorted. */
  names(): string[] {
    return [...this.#factories.keys()].sort();
  }

  /**
   * Builds the provider named by `config.cluster.provider`.
   * @throws {Error} naming the known providers when the name is unknown
   */
  create(config: Config): CloudProvider {
    const name = config.cluster.provider;
    const factory = this.#factories.get(name);
    if (!factory) {
      throw new Error(
        `Cannot start provider "${name}": it is not registered (known: ${this.names().join(", ")})`,
      );
    }
    return factory(config);
  }
}
