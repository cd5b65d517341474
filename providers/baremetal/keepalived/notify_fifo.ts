/**
 * keepalived's VRRP notify FIFO (`vrrp_notify_fifo` in `global_defs`): keepalived writes one line
 * per state change, in order, such as `INSTANCE "keelson_v4_g5" MASTER 200`. Reading it needs no
 * script run as root on Keelson's behalf: keepalived creates the FIFO owned by the user named in
 * the directive (mode 0600), and Keelson, running as that user, reads it.
 *
 * The reader opens the FIFO read-write: it never sees end-of-file while keepalived reloads, and
 * opening never blocks waiting for a writer. keepalived deletes a FIFO it created when it stops
 * (after writing `STOP` for each instance) and makes a new one when it starts again, and on every
 * reload too (2.2.7: a new inode, no line for an unchanged state), so the reader checks every
 * `retryMs` that the path still names the FIFO it holds open, and reopens it otherwise. A path
 * that names nothing `retryMs` after the FIFO closed (never created, or deleted and not
 * recreated: not a reload) means no keepalived runs: `onGone` says so. keepalived opens the FIFO
 * non-blocking (checked on 2.2.7: O_RDWR|O_NONBLOCK), so a Keelson that stopped reading never
 * stalls VRRP: once the pipe is full keepalived's writes fail, and the lines kept are read in
 * order when Keelson starts again. Nothing read here is trusted: a line that is not exactly of the
 * documented shape is dropped, and a line longer than any keepalived writes is dropped whole, up
 * to its newline (its tail, read later, is never taken for a line of its own).
 *
 * @module
 */
import { delay } from "../../../src/kube/delay.ts";
import { logger } from "../../../src/log/logging.ts";
import { errorMessage } from "../../../src/log/error_message.ts";

/** VRRP states keepalived reports for an instance. */
export const VRRP_STATES = ["MASTER", "BACKUP", "FAULT", "STOP"] as const;
/** One VRRP state. */
export type VrrpState = (typeof VRRP_STATES)[number];

/** One parsed line of the FIFO. */
export type NotifyEvent =
  | { kind: "state"; instance: string; state: VrrpState; priority: number }
  /** keepalived removed the instance on a reload. */
  | { kind: "deleted"; instance: string };

// keepalived quotes the name; Keelson's instance names are [a-z0-9_]. Other keepalived instances
// (the operator's own) may use more, but never quotes, spaces or control characters.
const LINE = /^(INSTANCE|GROUP) "([A-Za-z0-9_.:-]{1,64})" ([A-Z_]{2,24})(?: (\d{1,3}))?$/;

/**
 * Parses one FIFO line. Group lines and notifications that are not a state of an instance
 * (`MASTER_RX_LOWER_PRI`, priority changes) return undefined, as does anything malformed.
 * @param line one line, without its newline
 * @returns the event, or undefined
 */
export function parseNotifyLine(line: string): NotifyEvent | undefined {
  const match = LINE.exec(line);
  if (!match || match[1] !== "INSTANCE") return undefined;
  const instance = match[2]!;
  const word = match[3]!;
  if (word === "DELETED") return { kind: "deleted", instance };
  if (!(VRRP_STATES as readonly string[]).includes(word)) return undefined;
  const priority = match[4] === undefined ? 0 : Number(match[4]);
  if (priority > 255) return undefined;
  return { kind: "state", instance, state: word as VrrpState, priority };
}

/** Options of `readNotifyFifo`. */
export interface ReadNotifyFifoOptions {
  /** Path of the FIFO keepalived writes. */
  path: string;
  /** Called for every parsed event, in order. */
  onEvent: (event: NotifyEvent) => void;
  /** Called once the FIFO is open (again). */
  onOpen?: () => void;
  /**
   * Called when the path names nothing: at the start (keepalived has not created it) and once
   * after a FIFO that was open is gone. keepalived is not running then.
   */
  onGone?: () => void;
  /** Stops reading. */
  signal: AbortSignal;
  /** Retry period while the FIFO does not exist yet (keepalived creates it). @default 1000 */
  retryMs?: number;
}

const MAX_LINE = 512;

/**
 * Reads the FIFO until `signal` aborts, reopening it when it disappears (keepalived recreated
 * it). Never rejects.
 * @param options path, callbacks and signal
 */
export async function readNotifyFifo(options: ReadNotifyFifoOptions): Promise<void> {
  const log = logger("keepalived", "notify-fifo");
  const retryMs = options.retryMs ?? 1000;
  let lastError = "";
  let gone = false;
  while (!options.signal.aborted) {
    let file: Deno.FsFile | undefined;
    try {
      const info = await Deno.lstat(options.path).catch((error) => {
        if (error instanceof Deno.errors.NotFound && !gone) {
          gone = true;
          options.onGone?.();
        }
        throw error;
      });
      gone = false;
      if (!info.isFifo) throw new Error(`${options.path} is not a FIFO`);
      file = await Deno.open(options.path, { read: true, write: true });
      lastError = "";
      log.info("Reading keepalived state changes from {path}", { path: options.path });
      options.onOpen?.();
      await readLines(file, options);
    } catch (error) {
      const message = errorMessage(error);
      // a FIFO that does not exist yet is the normal start (Keelson starts before keepalived),
      // reported once at info above; only other failures are warnings
      const expected = error instanceof Deno.errors.NotFound;
      if (!options.signal.aborted && message !== lastError && !expected) {
        log.warn("Cannot read keepalived's notify FIFO {path} (retrying): {error}", {
          path: options.path,
          error: message,
        });
      }
      lastError = message;
    } finally {
      try {
        file?.close();
      } catch { /* closed by abort */ }
    }
    await delay(retryMs, options.signal);
  }
}

async function readLines(file: Deno.FsFile, options: ReadNotifyFifoOptions): Promise<void> {
  // closing the file cancels a pending read, which is how a stop or a replaced FIFO interrupts it
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    try {
      file.close();
    } catch { /* already closed */ }
  };
  const onAbort = close;
  options.signal.addEventListener("abort", onAbort, { once: true });
  const held = (await file.stat()).ino;
  const watchdog = setInterval(() => {
    Deno.lstat(options.path).then(
      (info) => {
        if (info.ino !== held) close();
      },
      () => close(),
    );
  }, options.retryMs ?? 1000);
  const decoder = new TextDecoder();
  const buffer = new Uint8Array(4096);
  let pending = "";
  // true while the rest of an over-long line is still to come: junk up to the next newline
  let discarding = false;
  try {
    while (!options.signal.aborted) {
      let n: number | null;
      try {
        n = await file.read(buffer);
      } catch (error) {
        if (options.signal.aborted || closed) return;
        throw error;
      }
      if (n === null) return;
      pending += decoder.decode(buffer.subarray(0, n), { stream: true });
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      if (discarding && lines.length > 0) {
        lines.shift();
        discarding = false;
      }
      // a line longer than any keepalived writes is garbage: drop it, its tail included
      if (pending.length > MAX_LINE) {
        pending = "";
        discarding = true;
      }
      for (const line of lines) {
        const event = parseNotifyLine(line);
        if (event) options.onEvent(event);
      }
    }
  } finally {
    clearInterval(watchdog);
    options.signal.removeEventListener("abort", onAbort);
  }
}
