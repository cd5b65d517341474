/**
 * Encoding a heartbeat report for its annotation: cut to its bounds (`fit_host_report.ts`), then
 * validated by the schema readers use (`host_report.ts`). Apart from both so that neither imports
 * the other.
 *
 * @module
 */
import { fitHostReport } from "./fit_host_report.ts";
import { type HostReport, HostReportSchema } from "./host_report.ts";
import { toLegacyFields } from "./legacy_report_fields.ts";

/**
 * Encodes a report for the annotation: with the fields older readers require
 * (`legacy_report_fields.ts`), cut to the bounds when beyond them (`fitHostReport`), then
 * validated, so a host never publishes what a reader would refuse.
 * @param report the report
 * @returns compact JSON of at most MAX_REPORT_BYTES
 * @throws {Error} when the report does not validate for another reason than its size (a bug)
 */
export function encodeHostReport(report: HostReport): string {
  const parsed = HostReportSchema.safeParse(fitHostReport(toLegacyFields(report)));
  if (!parsed.success) {
    throw new Error(`Invalid data-plane report: ${parsed.error.issues[0]?.message ?? "?"}`);
  }
  return JSON.stringify(parsed.data);
}
