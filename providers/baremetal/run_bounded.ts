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
  };
}
