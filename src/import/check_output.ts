/**
 * The validation `keelson check` runs (`loadConfigFile` with the named files), run on an imported
 * inventory's text before it is written anywhere, with that text's line numbers: the schema and
 * cross-field checks, the paths the binary may write, the BGP password files and the files the
 * inventory names.
 *
 * @module
 */
import { writePathIssues } from "../config/baked_permissions.ts";
import { readBgpSecrets } from "../config/bgp_secrets.ts";
import { ConfigError, type ConfigIssue } from "../config/config_error.ts";
import { namedFileIssues } from "../config/named_files.ts";
import { parseConfig } from "../config/parse_config.ts";
import { formatPath, indexLines, locateLine } from "../config/source_lines.ts";
import type { Config } from "../config/types.ts";

/**
 * Every problem `keelson check` would report for this text.
 * @param text the inventory
 * @param file the name to give in issues (the output file, or "<stdout>")
 * @returns the issues in line order; empty when it passes
 */
export async function inventoryIssues(text: string, file: string): Promise<ConfigIssue[]> {
  let config: Config;
  try {
    config = parseConfig(text, file);
  } catch (error) {
    if (error instanceof ConfigError) return error.issues;
    throw error;
  }
  const raw = [
    ...writePathIssues(config),
    ...(await readBgpSecrets(config)).issues,
    ...(await namedFileIssues(config)),
  ];
  const index = indexLines(text);
  return raw.map((issue): ConfigIssue => {
    const line = locateLine(index, issue.path);
    return {
      file,
      ...(line !== undefined ? { line } : {}),
      path: formatPath(issue.path),
      message: issue.message,
    };
  }).sort((a, b) => (a.line ?? Infinity) - (b.line ?? Infinity));
}
