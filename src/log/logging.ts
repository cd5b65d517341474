/**
 * Logging: structured records through @logtape/logtape; JSON lines when stderr is not a terminal
 * (journald, files), readable text on a terminal.
 *
 * @module
 */
import {
  configure,
  dispose,
  getJsonLinesFormatter,
  getLogger,
  getStreamSink,
  getTextFormatter,
  type Logger,
  type LogLevel,
  type LogRecord,
  reset,
  type TextFormatter,
} from "@logtape/logtape";
import { terminalSafeLogValue } from "../text/terminal_safe.ts";

/** Accepted `--log-level` values, quietest last. */
export const LOG_LEVELS = ["trace", "debug", "info", "warning", "error", "fatal"] as const;

/** Options for `setupLogging`. */
export interface LoggingOptions {
  /** Lowest level written. @default "info" */
  level?: LogLevel;
  /** `json`, `text`, or `auto` (text on a terminal, JSON otherwise). @default "auto" */
  format?: "json" | "text" | "auto";
}

/**
 * Configures the process-wide log sinks. Safe to call again (for example after a reload).
 * @param options level and format
 */
export async function setupLogging(options: LoggingOptions = {}): Promise<void> {
  const format = options.format ?? "auto";
  const json = format === "json" || (format === "auto" && !Deno.stderr.isTerminal());
  await reset();
  await configure({
    reset: true,
    sinks: {
      // stderr, so stdout stays free for command output (check, plan, render)
      stderr: getStreamSink(Deno.stderr.writable, {
        formatter: withReadableErrors(
          json
            ? getJsonLinesFormatter()
            : getTextFormatter({ timestamp: "date-time", value: terminalSafeLogValue }),
        ),
      }),
    },
    loggers: [
      { category: ["keelson"], lowestLevel: options.level ?? "info", sinks: ["stderr"] },
      { category: ["logtape", "meta"], lowestLevel: "warning", sinks: ["stderr"] },
    ],
  });
}

/**
 * Writes out every log record still buffered by the sinks (the stream sink writes
 * asynchronously) and closes them. Call it before the process exits, or a fatal line logged
 * just before `Deno.exit` is lost.
 */
export async function flushLogging(): Promise<void> {
  await dispose();
}

/**
 * The logger of one part of Keelson, e.g. `logger("controllers", "node")`.
 * @param category path below `keelson`
 * @returns a logtape Logger
 */
export function logger(...category: string[]): Logger {
  return getLogger(["keelson", ...category]);
}

/**
 * Errors in log properties become their `name: message` text: JSON would render an Error as
 * `{}`, and the message is what an operator needs (stacks are for bugs, not for log lines).
 * @param formatter the formatter to wrap
 * @returns a formatter that sees errors as strings
 */
export function withReadableErrors(formatter: TextFormatter): TextFormatter {
  const readable = (value: unknown): unknown =>
    value instanceof Error ? `${value.name}: ${value.message}` : value;
  return (record: LogRecord) =>
    formatter({
      ...record,
      message: record.message.map(readable),
      properties: Object.fromEntries(
        Object.entries(record.properties).map(([key, value]) => [key, readable(value)]),
      ),
    });
}
