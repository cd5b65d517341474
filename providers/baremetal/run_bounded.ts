/**
 * Runs a host command (a config check, a reload) with a deadline, so a hung tool never stalls
 * an apply.
 *
 * @module
 */

/** What a bounded command did. */
export interface BoundedRun {
  /** Exit code (non-zero when the deadline killed it). */
  code: number;
  /** Standard output, decoded. */
  stdout: string;
  /** Standard error, decoded. */
  stderr: string;
  /** True when the deadline ended the command. */
  timedOut: boolean;
  /** The signal that ended the command, if one did. */
  signal: Deno.Signal | null;
  /** The deadline it ran under, in milliseconds. */
  timeoutMs: number;
}

/**
 * Runs `argv` with no stdin and its output captured, killed after `timeoutMs`.
 * @param argv the command and its arguments
 * @param timeoutMs the deadline
 * @returns the exit code, the output and whether the deadline ended it
 * @throws {TypeError} when `argv` is empty
 * @example
 * ```ts
 * const check = await runBounded(["bird", "-p", "-c", "/etc/bird/keelson.conf"], 30_000);
 * ```
 */
export async function runBounded(argv: readonly string[], timeoutMs: number): Promise<BoundedRun> {
  const [cmd, ...args] = argv;
  if (!cmd) throw new TypeError("Empty command");
  const timeout = AbortSignal.timeout(timeoutMs);
  const out = await new Deno.Command(cmd, {
    args,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: timeout,
  }).output();
  const decoder = new TextDecoder();
  return {
    code: out.code,
    stdout: decoder.decode(out.stdout),
    stderr: decoder.decode(out.stderr),
    timedOut: timeout.aborted,
    signal: out.signal,
    timeoutMs,
  };
}

/** Longest part of a command's output quoted in a reason. */
const MAX_REASON_CHARS = 500;

/**
 * Why a command failed, never empty: the deadline, the signal that killed it, or its exit code
 * with what it printed (stderr's non-empty lines, else stdout's, joined by ` | `, cut at 500
 * characters). A tool killed from outside or one that fails silently still leaves a reason.
 * @param run a run whose code is not 0 or that timed out
 * @returns e.g. `exited 1: Device "bond9" does not exist.`, `was killed by SIGKILL`
 * @example
 * ```ts
 * const run = await runBounded(["ip", "-j", "addr", "show"], 5_000);
 * if (run.code !== 0) throw new Error(`Cannot list addresses: ${failureReason(run)}`);
 * ```
 */
export function failureReason(run: BoundedRun): string {
  if (run.timedOut) return `did not finish within ${run.timeoutMs} ms and was stopped`;
  if (run.signal) return `was killed by ${run.signal}`;
  const lines = (text: string) => text.split("\n").map((l) => l.trim()).filter((l) => l !== "");
  const said = lines(run.stderr).length ? lines(run.stderr) : lines(run.stdout);
  if (said.length === 0) return `exited ${run.code} and printed nothing`;
  const text = said.join(" | ");
  return `exited ${run.code}: ${
    text.length > MAX_REASON_CHARS ? `${text.slice(0, MAX_REASON_CHARS)}…` : text
  }`;
}
