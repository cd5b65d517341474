/**
 * The issues `parseConfig` reports for a text (none when it accepts it), for the config tests.
 *
 * @module
 */
import { ConfigError, type ConfigIssue } from "../../../src/config/config_error.ts";
import { parseConfig } from "../../../src/config/parse_config.ts";

/**
 * Parses `text` as `keelson.toml`.
 * @param text the inventory
 * @returns its issues, or [] when it is valid
 * @throws anything but a ConfigError
 */
export function issues(text: string): ConfigIssue[] {
  try {
    parseConfig(text, "keelson.toml");
  } catch (error) {
    if (error instanceof ConfigError) return error.issues;
    throw error;
  }
  return [];
}
