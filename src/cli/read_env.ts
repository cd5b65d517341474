/**
 * Environment fallbacks for flags (`KEELSON_CONFIG`, `KEELSON_HOST`, ...).
 *
 * @module
 */

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
