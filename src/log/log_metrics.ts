/**
 * `keelson_log_lines_dropped_total{reason}`: log lines stderr did not get (logging.ts), counted
 * from the process's start, both reasons present from the first scrape.
 *
 * @module
 */
import { Counter, type Registry } from "prom-client";
import { DROP_REASONS, type DropReason } from "./log_line_writer.ts";
import { declareOnce } from "../metrics/registry.ts";

const NAME = "keelson_log_lines_dropped_total";

/**
 * Registers the dropped-lines counter, read at scrape time.
 * @param registry the process's registry
 * @param dropped the counts so far (logging.ts's `droppedLogLines`)
 * @returns the counter
 */
export function logLineMetrics(
  registry: Registry,
  dropped: () => Readonly<Record<DropReason, number>>,
): Counter<"reason"> {
  const reported: Record<DropReason, number> = { full: 0, closed: 0 };
  return declareOnce(registry, NAME, () =>
    new Counter({
      name: NAME,
      help: "Log lines not written to stderr, by reason: full (stderr did not take them fast " +
        "enough, e.g. a stalled journald or an unread pipe), closed (a write to stderr failed, " +
        "e.g. its reader went away; nothing more is written until a restart).",
      labelNames: ["reason"],
      registers: [registry],
      collect(): void {
        const now = dropped();
        for (const reason of DROP_REASONS) {
          // a counter only goes up: add what was dropped since the last scrape
          this.inc({ reason }, now[reason] - reported[reason]);
          reported[reason] = now[reason];
        }
      },
    }));
}
