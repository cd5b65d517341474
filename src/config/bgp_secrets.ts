/**
 * TCP-MD5 passwords of `[[bgp.peers]]`, read from their `password_file`s. BIRD strings have no
 * escapes (a `"` in a password ends the string and lets the rest of the value add protocols, and
 * the result still passes `bird -p`), and the kernel refuses keys over 80 bytes at run time, taking
 * the session down. So a password is accepted only if it is 1-80 bytes of printable ASCII without
 * `"` and `\`; anything else is a config error naming the file and the peer.
 *
 * @module
 */
import type { RawIssue } from "./_schema_issues.ts";
import {
  InputFileError,
  osReason,
  PASSWORD_FILE,
  readInputFile,
} from "../files/read_input_file.ts";
import type { Config } from "./types.ts";

/** The kernel's TCP-MD5 key limit (TCP_MD5SIG_MAXKEYLEN). */
export const MAX_PASSWORD_BYTES = 80;
/** Printable ASCII 0x21-0x7e without `"` and `\`. */
export const PASSWORD_REGEXP = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

/**
 * Why a password cannot be rendered, or undefined when it can.
 * @param password the key, without the file's trailing newline
 * @returns a sentence that never quotes the password
 */
export function passwordProblem(password: string): string | undefined {
  if (password.length === 0) return "is empty";
  if (!PASSWORD_REGEXP.test(password)) {
    return "holds a character other than printable ASCII (no space, '\"' or '\\')";
  }
  if (password.length > MAX_PASSWORD_BYTES) {
    return `is ${password.length} bytes; the kernel's TCP-MD5 limit is ${MAX_PASSWORD_BYTES}`;
  }
  return undefined;
}

/**
 * Why a password file's permissions are unsafe: every user of the host could read (or replace)
 * the TCP-MD5 key. BIRD never reads the file (Keelson copies the key into BIRD's 0640 file).
 * @param mode the file's mode (`Deno.FileInfo.mode`; null where the platform has none)
 * @returns the problem, or undefined
 */
export function modeProblem(mode: number | null): string | undefined {
  if (mode === null || (mode & 0o007) === 0) return undefined;
  const octal = (mode & 0o777).toString(8).padStart(3, "0");
  const what = mode & 0o002 ? "writable" : "readable";
  return `is ${what} by every user of the host (mode ${octal}); ` +
    "chmod 600 it (owner keelson) or 640 (group keelson)";
}

/** Passwords by `password_file` path, and the problems of the files that could not be used. */
export interface BgpSecrets {
  passwords: Map<string, string>;
  issues: RawIssue[];
}

/**
 * Reads and validates every peer's password file (a file named by several peers is read once).
 * @param config a validated config
 * @returns the passwords and one issue per unusable file (at the peer's `password_file` key)
 */
export async function readBgpSecrets(config: Config): Promise<BgpSecrets> {
  const passwords = new Map<string, string>();
  const issues: RawIssue[] = [];
  const failed = new Map<string, string>();
  for (const [i, peer] of (config.bgp?.peers ?? []).entries()) {
    const file = peer.password_file;
    if (file === undefined) continue;
    let problem = failed.get(file);
    if (problem === undefined && !passwords.has(file)) {
      try {
        // a regular file of at most 4 KiB, within a deadline: a FIFO or /dev/zero here once hung
        // every reload behind it or filled memory
        const text = (await readInputFile(file, PASSWORD_FILE)).replace(/\r?\n$/, "");
        problem = passwordProblem(text) ?? modeProblem((await Deno.stat(file)).mode);
        if (problem === undefined) passwords.set(file, text);
        else problem = `the password in "${file}" ${problem}`;
      } catch (error) {
        problem = `cannot read "${file}": ${
          error instanceof InputFileError ? error.message : osReason(error)
        }`;
      }
      if (problem !== undefined) failed.set(file, problem);
    }
    if (problem !== undefined) {
      issues.push({
        path: ["bgp", "peers", i, "password_file"],
        message: `${problem} (peer "${peer.name}")`,
      });
    }
  }
  return { passwords, issues };
}
