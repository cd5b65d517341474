/**
 * Writes log lines to an output (stderr) that may stall or close without taking the process
 * with it: lines wait in a bounded buffer and one asynchronous write at a time drains it, so a
 * log call never waits for the output. When the output does not keep up the newest lines are
 * dropped; when a write fails (EPIPE: the reader is gone) the output is given up for good. Both
 * are counted, and a line says how many were lost once the output takes lines again.
 *
 * Deno's async write to a pipe or socket runs in a blocking thread of the runtime: with a full
 * pipe that thread waits in write(2) while JavaScript goes on (measured on Deno 2.9.6), and the
 * process still exits at once on `Deno.exit`. A closed pipe rejects the write with
 * `BrokenPipe` (Deno ignores SIGPIPE, as systemd does for its services).
 *
 * @module
 */

/** Where the lines go: `Deno.stderr` in production. */
export interface LogOutput {
  /** Writes some of `bytes`; resolves with how many were written, rejects when it cannot. */
  write(bytes: Uint8Array): Promise<number>;
}

/** Why a line was not written: `full` the buffer was full (output stalled or too slow), `closed`
 * a write to the output failed and nothing more is written. */
export type DropReason = "full" | "closed";

/** The drop reasons, in the order metrics list them. */
export const DROP_REASONS: readonly DropReason[] = ["full", "closed"];

/** Options of a `LogLineWriter`. */
export interface LogLineWriterOptions {
  /** Bytes that may wait for the output, the write in progress included. @default 1 MiB */
  maxBufferedBytes?: number;
  /** Largest single write: waiting lines are joined up to this size. @default 64 KiB */
  maxWriteBytes?: number;
  /**
   * The line that reports `dropped` lines lost while the output was full, queued before the
   * next line once there is room for both (formatted like any other log line).
   */
  dropNotice?: (dropped: number) => Uint8Array;
}

const MIB = 1024 * 1024;

/** A bounded, asynchronous writer of log lines (see the module documentation). */
export class LogLineWriter {
  readonly #output: LogOutput;
  readonly #maxBufferedBytes: number;
  readonly #maxWriteBytes: number;
  readonly #dropNotice: ((dropped: number) => Uint8Array) | undefined;
  /** Lines waiting, oldest first; `#head` is the first not yet taken. */
  #lines: Uint8Array[] = [];
  #head = 0;
  /** Bytes waiting or being written. */
  #bufferedBytes = 0;
  #writing = false;
  #closed = false;
  /** Lines dropped as `full` since the last notice was queued. */
  #unreported = 0;
  readonly #dropped: Record<DropReason, number> = { full: 0, closed: 0 };
  #drained: Array<() => void> = [];

  /**
   * @param output where the lines go
   * @param options buffer bounds and the drop notice
   */
  constructor(output: LogOutput, options: LogLineWriterOptions = {}) {
    this.#output = output;
    this.#maxBufferedBytes = options.maxBufferedBytes ?? MIB;
    this.#maxWriteBytes = options.maxWriteBytes ?? 64 * 1024;
    this.#dropNotice = options.dropNotice;
  }

  /** Lines dropped so far, by reason. */
  get dropped(): Readonly<Record<DropReason, number>> {
    return { ...this.#dropped };
  }

  /** Bytes waiting for the output or being written. */
  get bufferedBytes(): number {
    return this.#bufferedBytes;
  }

  /** True once a write failed: later lines are dropped as `closed`. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Queues one line (its bytes, newline included). Never waits and never throws.
   * @param line the encoded line
   * @returns whether it was queued (false: dropped and counted)
   */
  write(line: Uint8Array): boolean {
    if (this.#closed) {
      this.#dropped.closed++;
      return false;
    }
    if (this.#unreported > 0 && this.#dropNotice) {
      const notice = this.#dropNotice(this.#unreported);
      if (!this.#fits(notice.length + line.length)) return this.#dropFull();
      this.#unreported = 0;
      this.#enqueue(notice);
    } else if (!this.#fits(line.length)) {
      return this.#dropFull();
    }
    this.#enqueue(line);
    if (!this.#writing) void this.#drain();
    return true;
  }

  /**
   * Waits until every queued line is written, the output is closed, or `timeoutMs` passed: a
   * stalled output cannot hold the process's exit.
   * @param timeoutMs the longest wait
   * @returns true when nothing is left to write (written, or dropped with a closed output)
   */
  flush(timeoutMs: number): Promise<boolean> {
    if (this.#idle()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const wait: { settled: boolean; timer?: ReturnType<typeof setTimeout> } = { settled: false };
      const done = () => {
        wait.settled = true;
        clearTimeout(wait.timer);
        resolve(true);
      };
      this.#drained.push(done);
      // pending promise jobs may run inside setTimeout (seen under `deno test`): `done` may
      // already have been called when it returns
      wait.timer = setTimeout(() => {
        wait.settled = true;
        this.#drained = this.#drained.filter((waiter) => waiter !== done);
        resolve(false);
      }, timeoutMs);
      if (wait.settled) clearTimeout(wait.timer);
    });
  }

  #fits(bytes: number): boolean {
    return this.#bufferedBytes + bytes <= this.#maxBufferedBytes;
  }

  #dropFull(): false {
    this.#dropped.full++;
    this.#unreported++;
    return false;
  }

  #enqueue(line: Uint8Array): void {
    this.#lines.push(line);
    this.#bufferedBytes += line.length;
  }

  #idle(): boolean {
    return !this.#writing && this.#head === this.#lines.length;
  }

  /** Writes until the queue is empty; the only writer, so lines keep their order. */
  async #drain(): Promise<void> {
    this.#writing = true;
    try {
      while (this.#head < this.#lines.length) {
        const { bytes, lines } = this.#take();
        try {
          await this.#writeAll(bytes);
        } catch {
          // EPIPE and every other write error: retrying would only fail again (or spin), and a
          // failed write to stderr has nowhere to be reported but the metric
          this.#close(lines);
          return;
        } finally {
          this.#bufferedBytes -= bytes.length;
        }
      }
    } finally {
      this.#writing = false;
      if (this.#idle()) {
        const waiters = this.#drained;
        this.#drained = [];
        for (const resolve of waiters) resolve();
      }
    }
  }

  /** Takes waiting lines, joined, up to `maxWriteBytes` (at least one line). */
  #take(): { bytes: Uint8Array; lines: number } {
    let end = this.#head + 1;
    let size = this.#lines[this.#head]!.length;
    while (
      end < this.#lines.length && size + this.#lines[end]!.length <= this.#maxWriteBytes
    ) {
      size += this.#lines[end]!.length;
      end++;
    }
    const taken = this.#lines.slice(this.#head, end);
    this.#head = end;
    if (this.#head === this.#lines.length) {
      this.#lines = [];
      this.#head = 0;
    } else if (this.#head > 1024 && this.#head * 2 > this.#lines.length) {
      // compact now and then, so a long-running queue does not keep its written lines
      this.#lines = this.#lines.slice(this.#head);
      this.#head = 0;
    }
    if (taken.length === 1) return { bytes: taken[0]!, lines: 1 };
    const bytes = new Uint8Array(size);
    let offset = 0;
    for (const line of taken) {
      bytes.set(line, offset);
      offset += line.length;
    }
    return { bytes, lines: taken.length };
  }

  async #writeAll(bytes: Uint8Array): Promise<void> {
    let offset = 0;
    while (offset < bytes.length) {
      const written = await this.#output.write(bytes.subarray(offset));
      if (!(written > 0)) throw new Error("the log output took no bytes");
      offset += written;
    }
  }

  /** Gives the output up: the lines of the failed write and every waiting one are dropped. */
  #close(failedLines: number): void {
    this.#closed = true;
    const waiting = this.#lines.length - this.#head;
    for (let i = this.#head; i < this.#lines.length; i++) {
      this.#bufferedBytes -= this.#lines[i]!.length;
    }
    this.#lines = [];
    this.#head = 0;
    this.#dropped.closed += failedLines + waiting;
  }
}
