/**
 * Why a host file Keelson writes (keepalived's and BIRD's files, the track files) could not be
 * written, in words an operator can act on, instead of Deno's "run again with the --allow-write
 * flag", which no one can do to a compiled binary.
 *
 * @module
 */
import { BAKED_WRITE_DIRS } from "../../src/config/baked_permissions.ts";
import { osReason } from "../../src/files/read_input_file.ts";

/** A host file that could not be written; the message names the file and what to do. */
export class HostFileError extends Error {
  /**
   * @param path the file or directory
   * @param error what the write threw
   */
  constructor(path: string, error: unknown) {
    super(`Cannot write ${path}: ${writeProblem(error)}`, { cause: error });
    this.name = "HostFileError";
  }
}

/**
 * The reason a write failed.
 * @param error what the write threw
 * @returns a sentence without the path
 */
export function writeProblem(error: unknown): string {
  if (error instanceof Deno.errors.NotCapable) {
    return `the keelson binary may write only under ${BAKED_WRITE_DIRS.join(", ")} ` +
      '(docs/security.md "Permissions")';
  }
  if (error instanceof Deno.errors.PermissionDenied) {
    let uid: number | null = null;
    try {
      uid = Deno.uid();
    } catch { /* without --allow-sys=uid: say "this process" */ }
    return `permission denied: the directory must be writable by the user Keelson runs as ` +
      `(${uid === null ? "this process" : `uid ${uid}`}; docs/install.md)`;
  }
  return osReason(error);
}

/**
 * Runs a write, turning its failure into a `HostFileError` naming `path`.
 * @param path the file or directory written
 * @param write the write
 * @returns what the write returned
 * @throws {HostFileError} when it failed
 */
export async function writingHostFile<T>(path: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    throw new HostFileError(path, error);
  }
}
