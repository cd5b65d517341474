/**
 * Log records captured in memory for assertions: replaces the logging setup with one sink that
 * keeps every `keelson` record (debug and up). Undo with logtape's `reset()`.
 *
 * @module
 */
import { configure, type LogRecord } from "@logtape/logtape";

/**
 * Starts capturing.
 * @returns the array the records are appended to
 */
export async function captureLogs(): Promise<LogRecord[]> {
  const records: LogRecord[] = [];
  await configure({
    reset: true,
    sinks: { memory: (record: LogRecord) => void records.push(record) },
    loggers: [
      { category: ["keelson"], lowestLevel: "debug", sinks: ["memory"] },
      { category: ["logtape", "meta"], lowestLevel: "error", sinks: [] },
    ],
  });
  return records;
}
