/**
 * The one place where the heartbeat report keeps its older, one-daemon shape. Before reports
 * listed each announcer's apply outcome (`announcers`), they carried only keepalived's, as
 * `reload.keepalived`, and readers of that time require the field. During a rolling upgrade both
 * kinds of agents run side by side, so a new writer still fills that field in for old readers
 * (`toLegacyFields`), and a new reader turns an old report into the new shape
 * (`fromLegacyFields`). Nothing else reads or writes it; once no agent older than `announcers`
 * can run in a cluster, this file goes and the schema drops the field.
 *
 * @module
 */
import * as z from "zod/v4";

/** Outcomes of an announcer's config apply, as the report spells them. */
export const APPLY_STATES = [
  "success",
  "invalid",
  "error",
  "unchanged",
  "not_running",
  "none",
] as const;

/** An outcome of an announcer's config apply. */
export type ReportedApplyState = (typeof APPLY_STATES)[number];

/** The announcer whose outcome older reports carry in `reload`. */
const LEGACY_ANNOUNCER = "keepalived";

/**
 * The `reload` fields of older reports: keepalived's last apply outcome. Optional to a reader (a
 * report that lists `announcers` needs it not); always written for readers that require it.
 */
export const LEGACY_RELOAD_FIELDS = {
  keepalived: z.enum(APPLY_STATES).optional(),
} as const;

/** The report fields this file converts between (the rest passes through). */
interface AppliesShape {
  reload: { keepalived?: ReportedApplyState | undefined };
  announcers?: { name: string; apply: ReportedApplyState }[] | undefined;
}

/**
 * A decoded report in the current shape: an older report's `reload.keepalived` becomes its
 * `announcers`; a report that lists them keeps them. Either way the older field is dropped, so
 * readers see one shape.
 * @param report a report that passed the schema
 * @returns the report with `announcers` and without `reload.keepalived`
 */
export function fromLegacyFields<R extends AppliesShape>(
  report: R,
): R & { announcers: { name: string; apply: ReportedApplyState }[] } {
  const { keepalived: legacy, ...reload } = report.reload;
  // an older host that announced nothing wrote `none` as well: one entry, as it said
  const announcers = report.announcers ??
    (legacy ? [{ name: LEGACY_ANNOUNCER, apply: legacy }] : []);
  return { ...report, reload, announcers };
}

/**
 * A report to publish, with the fields older readers require: `reload.keepalived` is
 * keepalived's outcome among `announcers`, `none` when it does not run here.
 * @param report the report in the current shape
 * @returns the report with the older fields filled in
 */
export function toLegacyFields<R extends AppliesShape>(report: R): R {
  const keepalived = report.announcers?.find((a) => a.name === LEGACY_ANNOUNCER)?.apply ?? "none";
  return { ...report, reload: { ...report.reload, keepalived } };
}
