/**
 * Encoding a heartbeat report for its annotation: cut to its bounds (`fit_host_report.ts`), with
 * the fields older readers require (`legacy_report_fields.ts`), then validated by the schema
 * readers use (`host_report.ts`). Apart from both so that neither imports the other.
 *
 * @module
 */
import { fitHostReport } from "./fit_host_report.ts";
import { type HostReport, HostReportSchema } from "./host_report.ts";
import { MAX_REPORT_BYTES } from "./host_report_limits.ts";
import { toLegacyFields } from "./legacy_report_fields.ts";

/**
 * Encodes a report for the annotation: cut to the bounds when beyond them (`fitHostReport`),
 * with the fields older readers require, then validated, so a host never publishes what a reader
 * would refuse.
 * @param report the report
 * @returns compact JSON of at most MAX_REPORT_BYTES
 * @throws {Error} when the report does not validate for another reason than its size (a bug)
 */
export function encodeHostReport(report: HostReport): string {
  const parsed = HostReportSchema.safeParse(fitWithLegacyFields(report));
  if (!parsed.success) {
    throw new Error(`Invalid data-plane report: ${parsed.error.issues[0]?.message ?? "?"}`);
  }
  return JSON.stringify(parsed.data);
}

/** How close to the largest room the search for it gets (bytes). */
const ROOM_PRECISION_BYTES = 1024;

/**
 * The report cut to the bounds with the older fields, which repeat keepalived's announcements:
 * within the bound, the largest room for the rest found by bisection. A cut report repeats no
 * more than the whole one does, so the room the whole one leaves always fits.
 * @param report the report in the current shape
 * @returns the report to publish
 */
function fitWithLegacyFields(report: HostReport): unknown {
  const size = (value: unknown) => JSON.stringify(value).length;
  const within = (room: number) => {
    const published = toLegacyFields(fitHostReport(report, room));
    return size(published) <= MAX_REPORT_BYTES ? published : undefined;
  };
  const whole = within(MAX_REPORT_BYTES);
  if (whole) return whole;
  let fits = MAX_REPORT_BYTES - (size(toLegacyFields(report)) - size(report));
  // undefined only if that did not hold (a bug): the schema then refuses it, and says so
  let best = within(fits);
  let over = MAX_REPORT_BYTES;
  while (over - fits > ROOM_PRECISION_BYTES) {
    const room = Math.floor((fits + over) / 2);
    const published = within(room);
    if (published) [fits, best] = [room, published];
    else over = room;
  }
  return best;
}
