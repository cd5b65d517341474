/**
 * The one place where the heartbeat report keeps its older, keepalived-shaped fields:
 *
 * - `reload.keepalived`: before reports listed each announcer's apply outcome (`announcers`),
 *   they carried only keepalived's, and readers of that time require the field;
 * - `instances`: before reports listed each announcer's announcements with a protocol-neutral
 *   state (`announcements`), they listed keepalived's VRRP instances in VRRP's words (`MASTER`,
 *   `BACKUP`, …, learned from the notify `fifo` or from the `addresses`), and readers of that
 *   time require that list, in those words, and refuse any other.
 *
 * During a rolling upgrade both kinds of agents run side by side, so a new writer still fills
 * these fields in for old readers (`toLegacyFields`), and a new reader turns an old report into the
 * new shape (`fromLegacyFields`). Nothing else reads or writes them; once no agent older than
 * `announcements` can run in a cluster, this file goes and the schema drops the fields.
 *
 * @module
 */
import * as z from "zod/v4";
import { canonicalIp } from "../net/ip.ts";
import { REPORT_LIST_LIMITS as MAX } from "./host_report_limits.ts";

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

/** The announcer whose outcome and instances older reports carry. */
const LEGACY_ANNOUNCER = "keepalived";

/**
 * The `reload` fields of older reports: keepalived's last apply outcome. Optional to a reader (a
 * report that lists `announcers` needs it not); always written for readers that require it.
 */
export const LEGACY_RELOAD_FIELDS = {
  keepalived: z.enum(APPLY_STATES).optional(),
} as const;

/** The neutral states (`AnnouncementState`) in the words older reports used: VRRP's. */
const LEGACY_INSTANCE_STATES = {
  holding: "MASTER",
  standby: "BACKUP",
  failed: "FAULT",
  stopped: "STOP",
  unknown: "UNKNOWN",
} as const;

type NeutralState = keyof typeof LEGACY_INSTANCE_STATES;
type LegacyState = (typeof LEGACY_INSTANCE_STATES)[NeutralState];

const NEUTRAL_STATES = Object.fromEntries(
  Object.entries(LEGACY_INSTANCE_STATES).map(([neutral, legacy]) => [legacy, neutral]),
) as Record<LegacyState, NeutralState>;

/** How older reports said where a state was learned, by the neutral word. */
const LEGACY_SOURCES = { daemon: "fifo", addresses: "addresses" } as const;

/** One keepalived instance as older reports list it (and older readers require it, strictly). */
const LegacyInstanceSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9_.:-]{1,64}$/),
  state: z.enum(LEGACY_INSTANCE_STATES),
  source: z.enum(["fifo", "addresses"]),
  since: z.iso.datetime({ offset: true }),
  vips: z.array(z.string().max(45).refine((v) => canonicalIp(v) === v, "not a canonical IP"))
    .max(MAX.instanceVips),
});

/**
 * The top-level fields of older reports: keepalived's instances in VRRP's words. Optional to a
 * reader (a report that lists `announcements` needs it not); always written for readers that
 * require it.
 */
export const LEGACY_REPORT_FIELDS = {
  instances: z.array(LegacyInstanceSchema).max(MAX.instances).optional(),
} as const;

/** One announcement, as the fields this file converts need it. */
interface Announcement {
  announcer: string;
  name: string;
  state: NeutralState;
  observed: "daemon" | "addresses";
  since: string;
  vips: string[];
}

/** The report fields this file converts between (the rest passes through). */
interface LegacyShape {
  reload: { keepalived?: ReportedApplyState | undefined };
  announcers?: { name: string; apply: ReportedApplyState }[] | undefined;
  instances?: z.infer<typeof LegacyInstanceSchema>[] | undefined;
  announcements?: Announcement[] | undefined;
}

/**
 * A decoded report in the current shape: an older report's `reload.keepalived` becomes its
 * `announcers` and its `instances` its `announcements`; a report that lists them keeps them.
 * Either way the older fields are dropped, so readers see one shape.
 * @param report a report that passed the schema
 * @returns the report with `announcers` and `announcements`, without the older fields
 */
export function fromLegacyFields<R extends LegacyShape>(
  report: R,
): Omit<R, "instances"> & {
  announcers: { name: string; apply: ReportedApplyState }[];
  announcements: Announcement[];
} {
  const { keepalived: legacy, ...reload } = report.reload;
  const { instances, ...rest } = report;
  // an older host that announced nothing wrote `none` as well: one entry, as it said
  const announcers = report.announcers ??
    (legacy ? [{ name: LEGACY_ANNOUNCER, apply: legacy }] : []);
  const announcements = report.announcements ?? (instances ?? []).map((i) => ({
    announcer: LEGACY_ANNOUNCER,
    name: i.name,
    state: NEUTRAL_STATES[i.state],
    observed: i.source === "fifo" ? "daemon" as const : "addresses" as const,
    since: i.since,
    vips: i.vips,
    // the names keepalived's model gives the control-plane VIP's instances
    serves: /^keelson_cp_v[46]$/.test(i.name) ? "control-plane" as const : "services" as const,
  }));
  return { ...rest, reload, announcers, announcements };
}

/**
 * A report to publish, with the fields older readers require: `reload.keepalived` is
 * keepalived's outcome among `announcers`, `none` when it does not run here; `instances` are
 * keepalived's announcements in VRRP's words (none when it does not run here).
 * @param report the report in the current shape
 * @returns the report with the older fields filled in
 */
export function toLegacyFields<R extends LegacyShape>(
  report: R,
): R & Required<Pick<LegacyShape, "instances">> {
  const keepalived = report.announcers?.find((a) => a.name === LEGACY_ANNOUNCER)?.apply ?? "none";
  const instances = (report.announcements ?? [])
    .filter((a) => a.announcer === LEGACY_ANNOUNCER)
    .map((a) => ({
      name: a.name,
      state: LEGACY_INSTANCE_STATES[a.state],
      source: LEGACY_SOURCES[a.observed],
      since: a.since,
      vips: a.vips,
    }));
  return { ...report, reload: { ...report.reload, keepalived }, instances };
}
