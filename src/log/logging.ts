/**
 * Logging: structured records through @logtape/logtape; JSON lines when stderr is not a terminal
 * (journald, files), readable text on a terminal. Lines go to stderr through a bounded buffer
 * (log_line_writer.ts), so an output that stalls or closes never blocks or stops the agent; in
 * journald each line carries its level as a syslog priority (journal_stream.ts).
 *
 * @module
 */
import {
  compareLogLevel,
  configure,
  dispose,
  getJsonLinesFormatter,
  getLogger,
  getTextFormatter,
  type Logger,
  type LogLevel,
  type LogRecord,
  reset,
  type Sink,
  type TextFormatter,
} from "@logtape/logtape";
import { stderrIsJournal, withSyslogPrefix } from "./journal_stream.ts";
import { type DropReason, LogLineWriter } from "./log_line_writer.ts";
import { terminalSafeLogValue } from "../text/terminal_safe.ts";
import { plainLogValue, withPlainMessage } from "./plain_values.ts";

/** Accepted `--log-level` values, quietest last. */
export const LOG_LEVELS = ["trace", "debug", "info", "warning", "error", "fatal"] as const;

/** Options for `setupLogging`. */
export interface LoggingOptions {
  /** Lowest level written. @default "info" */
  level?: LogLevel;
  /** `json`, `text`, or `auto` (text on a terminal, JSON otherwise). @default "auto" */
  format?: "json" | "text" | "auto";
}

/** How long `flushLogging` waits by default for stderr to take the last lines. */
export const FLUSH_TIMEOUT_MS = 2_000;

const encoder = new TextEncoder();
/** The formatter of the current configuration; the drop notice is written with it. */
let formatter: TextFormatter = getTextFormatter();
/** stderr's writer, one for the process's life (its counts feed the metrics). */
let stderrWriter: LogLineWriter | undefined;
/**
 * The lowest level `setupLogging` writes; calls below it return before logtape builds a record
 * (logtape formats the message and copies the record before it compares levels: a trace line per
 * work-queue item cost more than the item's own bookkeeping).
 */
let lowestWritten: LogLevel = "trace";

/**
 * Configures the process-wide log sinks. Safe to call again (for example after a reload).
 * @param options level and format
 */
export async function setupLogging(options: LoggingOptions = {}): Promise<void> {
  const format = options.format ?? "auto";
  const json = format === "json" || (format === "auto" && !Deno.stderr.isTerminal());
  const lines = withReadableErrors(
    // values in the message as plain text, never quoted (plain_values.ts); in text, with control
    // characters escaped (terminal_safe.ts)
    json ? withPlainMessage(getJsonLinesFormatter()) : getTextFormatter({
      timestamp: "date-time",
      value: (value, inspect) => terminalSafeLogValue(value, (v) => plainLogValue(v, inspect)),
    }),
  );
  formatter = stderrIsJournal() ? withSyslogPrefix(lines) : lines;
  // stderr, so stdout stays free for command output (check, plan, render)
  const writer = stderrWriter ??= new LogLineWriter(Deno.stderr, { dropNotice });
  await reset();
  lowestWritten = options.level ?? "info";
  await configure({
    reset: true,
    sinks: { stderr: lineSink(writer) },
    loggers: [
      { category: ["keelson"], lowestLevel: lowestWritten, sinks: ["stderr"] },
      { category: ["logtape", "meta"], lowestLevel: "warning", sinks: ["stderr"] },
    ],
  });
}

/**
 * Waits, at most `timeoutMs`, for stderr to take the lines still buffered, then closes the
 * sinks. Call it before the process exits, or a fatal line logged just before `Deno.exit` is
 * lost. A stderr that nobody reads cannot hold the exit longer than the bound.
 * @param timeoutMs the longest wait
 * @returns true when every line was written (or stderr had closed: nothing to wait for)
 */
export async function flushLogging(timeoutMs = FLUSH_TIMEOUT_MS): Promise<boolean> {
  const flushed = await (stderrWriter?.flush(timeoutMs) ?? Promise.resolve(true));
  await dispose();
  lowestWritten = "trace";
  return flushed;
}

/**
 * Log lines not written to stderr since the process started, by reason: `full` (stderr did not
 * take them fast enough: a stalled journald, an unread pipe) and `closed` (a write failed, e.g.
 * the reader went away, and nothing more is written).
 * @returns the counts, zero before logging is set up
 */
export function droppedLogLines(): Readonly<Record<DropReason, number>> {
  return stderrWriter?.dropped ?? { full: 0, closed: 0 };
}

/** Formats each record and queues it; a log call never waits for stderr. */
function lineSink(writer: LogLineWriter): Sink {
  return (record: LogRecord) => {
    writer.write(encoder.encode(formatter(record)));
  };
}

/** The line that says how many lines a full stderr cost, in the current format. */
function dropNotice(dropped: number): Uint8Array {
  return encoder.encode(formatter({
    category: ["keelson", "log"],
    level: "warning",
    message: [`Dropped ${dropped} log lines: stderr did not take them fast enough`],
    rawMessage: "Dropped {dropped} log lines: stderr did not take them fast enough",
    timestamp: Date.now(),
    properties: { dropped },
  }));
}

/**
 * The logger of one part of Keelson, e.g. `logger("controllers", "node")`.
 * @param category path below `keelson`
 * @returns a logtape Logger
 */
export function logger(...category: string[]): Logger {
  return belowLevelSkipped(getLogger(["keelson", ...category]));
}

/** The levels a call can skip; warnings and errors always reach logtape. */
const SKIPPABLE_LEVELS = ["trace", "debug", "info"] as const;

/**
 * `inner` with its trace, debug and info calls returning at once below `lowestWritten`.
 * @param inner logtape's logger
 * @returns a logger that delegates everything else to `inner`
 */
function belowLevelSkipped(inner: Logger): Logger {
  const guarded: Logger = Object.create(inner);
  for (const level of SKIPPABLE_LEVELS) {
    const write = inner[level] as (...args: unknown[]) => void;
    (guarded[level] as (...args: unknown[]) => void) = (...args: unknown[]) => {
      if (compareLogLevel(level, lowestWritten) >= 0) write.apply(inner, args);
    };
  }
  return guarded;
}

/**
 * Errors in log properties become their text (`plainLogValue`: the message, with the name unless
 * it is the plain `Error`): JSON would render an Error as `{}`, and the message is what an
 * operator needs (stacks are for bugs, not for log lines).
 * @param formatter the formatter to wrap
 * @returns a formatter that sees errors as strings
 */
export function withReadableErrors(formatter: TextFormatter): TextFormatter {
  const readable = (value: unknown): unknown =>
    value instanceof Error ? plainLogValue(value, String) : value;
  return (record: LogRecord) =>
    formatter({
      ...record,
      message: record.message.map(readable),
      properties: Object.fromEntries(
        Object.entries(record.properties).map(([key, value]) => [key, readable(value)]),
      ),
    });
}
