/**
 * A child process whose output goes to a log file, stopped by its pid: SIGTERM, then SIGKILL
 * after a grace period. A process left over when the test process exits is SIGKILLed by an
 * `unload` listener, so a crashed test does not leave an apiserver behind.
 *
 * @module
 */

/** One long-running binary (etcd or kube-apiserver). */
export class ManagedProcess {
  readonly #name: string;
  readonly #binary: string;
  readonly #args: string[];
  readonly #logPath: string;
  #child: Deno.ChildProcess | undefined;
  #exited: Promise<Deno.CommandStatus> | undefined;
  #exitedNow = false;
  #onUnload: (() => void) | undefined;

  /**
   * @param name a short name for messages (`etcd`, `kube-apiserver`)
   * @param binary the executable's path
   * @param args its command-line arguments
   * @param logPath the file its stdout and stderr are appended to
   */
  constructor(name: string, binary: string, args: string[], logPath: string) {
    this.#name = name;
    this.#binary = binary;
    this.#args = args;
    this.#logPath = logPath;
  }

  /** The process id while running, else undefined. */
  get pid(): number | undefined {
    return this.#child && !this.#exitedNow ? this.#child.pid : undefined;
  }

  /** True while the process has not exited. */
  get running(): boolean {
    return this.#child !== undefined && !this.#exitedNow;
  }

  /** The log file path. */
  get logPath(): string {
    return this.#logPath;
  }

  /**
   * Starts the process (bash `exec`s the binary, so the pid is the binary's own).
   * @throws {Error} when it is already running
   */
  start(): void {
    if (this.running) throw new Error(`Cannot start ${this.#name}: it is already running`);
    this.#exitedNow = false;
    const child = new Deno.Command("bash", {
      args: ["-c", 'exec "$0" "$@" >>"$KEELSON_PROCESS_LOG" 2>&1', this.#binary, ...this.#args],
      env: { KEELSON_PROCESS_LOG: this.#logPath },
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    this.#child = child;
    this.#exited = child.status.then((status) => {
      this.#exitedNow = true;
      return status;
    });
    const pid = child.pid;
    this.#onUnload = () => {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    };
    globalThis.addEventListener("unload", this.#onUnload);
  }

  /**
   * Resolves with the exit status when the process exits (never, if it keeps running).
   * @returns the exit status
   */
  exited(): Promise<Deno.CommandStatus> {
    return this.#exited ?? Promise.resolve({ success: true, code: 0, signal: null });
  }

  /**
   * Stops the process: SIGTERM, then SIGKILL if it is still running after `graceMs`.
   * @param graceMs how long SIGTERM may take
   * @returns whether SIGKILL was needed
   */
  async stop(graceMs = 10_000): Promise<boolean> {
    const child = this.#child;
    if (!child || this.#exitedNow) {
      this.#cleanup();
      return false;
    }
    let killed = false;
    try {
      child.kill("SIGTERM");
    } catch {
      // exited meanwhile
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const graceOver = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), graceMs);
    });
    const outcome = await Promise.race([this.exited(), graceOver]);
    clearTimeout(timer);
    if (outcome === "timeout") {
      killed = true;
      try {
        child.kill("SIGKILL");
      } catch {
        // exited meanwhile
      }
      await this.exited();
    }
    this.#cleanup();
    return killed;
  }

  /**
   * Sends `signal` to the process (for crash tests: SIGKILL, SIGSTOP).
   * @param signal the signal
   */
  kill(signal: Deno.Signal): void {
    try {
      this.#child?.kill(signal);
    } catch {
      // exited meanwhile
    }
  }

  /**
   * The last lines of the log, for failure messages.
   * @param lines how many lines
   * @returns the tail, or a note that the log is unreadable
   */
  async logTail(lines = 40): Promise<string> {
    try {
      const text = await Deno.readTextFile(this.#logPath);
      return text.trimEnd().split("\n").slice(-lines).join("\n");
    } catch (error) {
      return `(cannot read ${this.#logPath}: ${String(error)})`;
    }
  }

  #cleanup(): void {
    if (this.#onUnload) globalThis.removeEventListener("unload", this.#onUnload);
    this.#onUnload = undefined;
  }
}

/**
 * Picks free TCP ports on 127.0.0.1 by binding port 0 and closing it (as envtest does); all are
 * held open together so the same port is not handed out twice.
 * @param count how many ports
 * @returns distinct port numbers
 */
export function freePorts(count: number): number[] {
  const listeners = Array.from(
    { length: count },
    () => Deno.listen({ hostname: "127.0.0.1", port: 0 }),
  );
  const ports = listeners.map((l) => (l.addr as Deno.NetAddr).port);
  for (const l of listeners) l.close();
  return ports;
}
