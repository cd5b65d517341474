/**
 * The provider registry: providers register a factory under their name; `run` builds the one the
 * configuration names.
 *
 * @module
 */
import type { Registry } from "prom-client";
import type { Config } from "../config/types.ts";
import type { CloudProvider } from "./provider.ts";

/** Builds a provider from the validated configuration. */
export type ProviderFactory = (config: Config) => CloudProvider;

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

  /**
   * Registers a factory.
   * @param name the `[cluster] provider` value that selects it
   * @param factory builds the provider
   * @throws {Error} when the name is already taken
   */
  register(name: string, factory: ProviderFactory): void {
    if (this.#factories.has(name)) {
      throw new Error(`Cannot register provider "${name}": the name is already registered`);
    }
    this.#factories.set(name, factory);
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
