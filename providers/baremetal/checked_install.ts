/**
 * Installs a host config file failing closed: the text goes to a temp file in the same
 * directory, the daemon's own checker runs on it, and only a text it accepts is renamed over the
 * file (atomic), so a rejected text never replaces the file in force.
 *
 * @module
 */
import { basename, dirname } from "node:path";
import { writingHostFile } from "./host_file_error.ts";
import { type BoundedRun, runBounded } from "./run_bounded.ts";

/** What to install and how to check it. */
export interface CheckedInstall {
  /** The file in force. */
  file: string;
  /** Its new text. */
  text: string;
  /** Permission bits of a newly created file. */
  mode: number;
  /** The check command for a candidate file (e.g. `keepalived -t -f <temp>`). */
  checkCommand: (candidate: string) => string[];
  /** Deadline of the check command. */
  timeoutMs: number;
}

// temp names are unique per process: the pid plus this counter
let sequence = 0;

/**
 * Writes, checks and renames `text` over `file`; the temp file is removed whatever happens.
 * The temp name starts with a dot and ends in `.tmp` so a `conf.d/*.conf` include never picks
 * it up.
 * @param install the file, text, mode and check
 * @returns undefined when the file now holds the text, else the failed check
 * @throws {HostFileError} when the directory, the temp file or the rename cannot be written
 * @example
 * ```ts
 * const failed = await installChecked({
 *   file: "/etc/bird/keelson.conf", text, mode: 0o640, timeoutMs: 30_000,
 *   checkCommand: (candidate) => ["bird", "-p", "-c", candidate],
 * });
 * ```
 */
export async function installChecked(install: CheckedInstall): Promise<BoundedRun | undefined> {
  const { file, text, mode } = install;
  const temp = `${dirname(file)}/.${basename(file)}.${Deno.pid}.${++sequence}.tmp`;
  await writingHostFile(dirname(file), () => Deno.mkdir(dirname(file), { recursive: true }));
  try {
    await writingHostFile(temp, () => writeSynced(temp, text, mode));
    const check = await runBounded(install.checkCommand(temp), install.timeoutMs);
    if (check.timedOut || check.code !== 0) return check;
    await writingHostFile(file, () => Deno.rename(temp, file));
    return undefined;
  } finally {
    await Deno.remove(temp).catch(() => {});
  }
}

async function writeSynced(path: string, text: string, mode: number): Promise<void> {
  // fsync before the rename so a crash never leaves an empty file in place of the old one
  using file = await Deno.open(path, { write: true, create: true, truncate: true, mode });
  const bytes = new TextEncoder().encode(text);
  let written = 0;
  while (written < bytes.length) written += await file.write(bytes.subarray(written));
  await file.sync();
}
