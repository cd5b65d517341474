/**
 * A process's command name (`/proc/<pid>/comm`), so a pid file that names some other process
 * (keepalived died and its pid was reused) is never signalled. Read by `cat`: Deno refuses every
 * `/proc` read without `--allow-all`, which the compiled binary does not have, and a child
 * process is not bound by Deno's permissions. `cat` (coreutils) is on every host; `ps` (procps)
 * is not always. `/proc/<pid>/comm` is readable by any user unless /proc is mounted with
 * `hidepid`, where another user's process reads as absent.
 *
 * @module
 */
import { runBounded } from "../run_bounded.ts";

/** `cat` of a /proc file returns at once; a hung one must not hold an apply. */
const COMM_TIMEOUT_MS = 5_000;

/**
 * The command name of process `pid`.
 * @param pid the process id (positive integer)
 * @returns the name (at most 15 characters, as the kernel keeps it), or undefined when there is
 *   no such process or it cannot be read
 */
export async function processComm(pid: number): Promise<string | undefined> {
  if (!Number.isInteger(pid) || pid < 1) return undefined;
  try {
    const run = await runBounded(["cat", `/proc/${pid}/comm`], COMM_TIMEOUT_MS);
    return run.code === 0 && !run.timedOut ? run.stdout.replace(/\n$/, "") : undefined;
  } catch {
    return undefined; // no `cat` on PATH: unknown, so never signalled
  }
}
