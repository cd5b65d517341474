/**
 * Environment fallbacks for flags (`KEELSON_CONFIG`, `KEELSON_HOST`, ...).
 *
 * @module
 */
import { UsageError } from "./usage_error.ts";

/**
 * The variable's value, or undefined when unset or when the process may not read the
 * environment (without --allow-env the fallback simply does not apply).
 * @param name the variable
 * @returns its value
 */
export function readEnv(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined;
  }
}

/**
 * A required flag's value, falling back to its environment variable (`--config` or
 * `KEELSON_CONFIG`); an empty value counts as missing.
 * @param value the flag as parsed
 * @param flag how the usage names it, e.g. `--config FILE`
 * @param env the fallback variable
 * @returns the value
 * @throws {UsageError} when neither the flag nor the variable is set (exit 2)
 * @example
 * ```ts
 * const configPath = requiredFlag(values.config, "--config FILE", "KEELSON_CONFIG");
 * ```
 */
export function requiredFlag(value: string | undefined, flag: string, env: string): string {
  const resolved = value ?? readEnv(env);
  if (!resolved) throw new UsageError(`${flag} is required (or set ${env})`);
  return resolved;
}
