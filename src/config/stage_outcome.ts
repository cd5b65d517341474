/**
 * What the root step (`keelson apply-host-config`) did with one staged file, told to the agent: a
 * small JSON file beside the installed file (root's directory, readable by the agent), naming the
 * staged file by inode (each staging is a rename: a new inode) and by the SHA-256 of its bytes, so
 * an outcome of an earlier staging is never taken for the current one. Its name starts with a dot
 * and ends in `.outcome`, so a `conf.d/*.conf` include never reads it.
 *
 * @module
 */
import { basename, dirname, join } from "node:path";

/** The outcome of one staged file. */
export interface StageOutcome {
  /** Inode of the staged file the root step read. */
  ino: number;
  /** SHA-256 (hex) of its bytes. */
  sha256: string;
  /** `installed`, `unchanged`, `refused` (not Keelson's rendering), `invalid`, `error`. */
  result: string;
  /** One sentence (never the staged text). */
  message: string;
}

/** The largest outcome file read. */
export const MAX_OUTCOME_BYTES = 16 * 1024;

/**
 * Where the outcome of the staged file for `installedFile` is written.
 * @param installedFile the file the daemon reads (`[keepalived] config_file`, `[bgp] config_file`)
 * @returns e.g. `/etc/keepalived/conf.d/.keelson.conf.outcome`
 */
export function outcomeFile(installedFile: string): string {
  return join(dirname(installedFile), `.${basename(installedFile)}.outcome`);
}

/**
 * The hex SHA-256 of a text's UTF-8 bytes.
 * @param text the staged text
 * @returns 64 hex digits
 */
export async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Parses an outcome file's text.
 * @param text the file's text
 * @returns the outcome, or undefined when it is not one
 */
export function parseStageOutcome(text: string): StageOutcome | undefined {
  if (text.length > MAX_OUTCOME_BYTES) return undefined;
  try {
    const value = JSON.parse(text) as Record<string, unknown>;
    const { ino, sha256, result, message } = value;
    if (
      typeof ino !== "number" || typeof sha256 !== "string" || !/^[0-9a-f]{64}$/.test(sha256) ||
      typeof result !== "string" || typeof message !== "string"
    ) return undefined;
    return { ino, sha256, result, message };
  } catch {
    return undefined;
  }
}
