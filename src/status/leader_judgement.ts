/**
 * The leader's judgement of the heartbeats, published for `keelson status`: the leader has
 * watched every heartbeat Lease all along (`observed_freshness.ts`, by its own monotonic clock),
 * so a reader that trusts it needs no watch of its own. Published as one annotation on a Lease
 * of its own (`<leader Lease name>-status`, next to the leader Lease), rewritten every
 * `JUDGEMENT_PERIOD_MS` with a sequence number that grows at every write.
 *
 * What it holds carries no clock time: each host's freshness and how long before the write the
 * leader saw its heartbeat change (a duration on the leader's monotonic clock), the heartbeat's
 * resourceVersion that judgement is of, and, per VIP, the hosts whose claim the leader holds
 * superseded (not renewed since another host began to list it).
 *
 * The reader's rule (`trustJudgement`): the publication names the holder of the leader Lease
 * as read in the same list, and this reader saw its sequence number change between two of its own
 * reads. Then the leader was alive and judging between those reads, by this reader's clock; no
 * remote clock is compared with another. Without that (no leader, another holder, no change seen
 * in time), the reader watches the Leases itself.
 *
 * Parsed strictly, bounded in size and entries like a heartbeat report.
 *
 * @module
 */
import type { V1Lease } from "@kubernetes/client-node";
import * as z from "zod/v4";
import { NAME_REGEXP } from "../config/schema.ts";
import { canonicalIp } from "../net/ip.ts";
import { type Heartbeat, vipClaims } from "./heartbeats.ts";
import type { Observation } from "./observed_freshness.ts";
import { compareCodeUnits } from "../text/code_unit_order.ts";

/** The annotation holding the judgement. */
export const JUDGEMENT_ANNOTATION = "keelson.io/heartbeat-judgement";
/** How often the leader rewrites it: a reader sees it change within this period. */
export const JUDGEMENT_PERIOD_MS = 500;
/** Largest annotation accepted (and written: hosts beyond the bound are left out, counted). */
export const MAX_JUDGEMENT_BYTES = 64 * 1024;
/** Hosts listed at most. */
export const MAX_JUDGED_HOSTS = 512;
/** VIPs with superseded claims listed at most. */
export const MAX_SUPERSEDED_VIPS = 256;

/**
 * The publication Lease's name for a leader Lease.
 * @param leaderLeaseName `[leader_election] name`
 * @returns e.g. `keelson-status`
 */
export function judgementLeaseName(leaderLeaseName: string): string {
  return `${leaderLeaseName}-status`;
}

const ip = z.string().max(45).refine((v) => canonicalIp(v) === v, "not a canonical IP");
const hostName = z.string().regex(NAME_REGEXP).max(63);

/** Schema of the annotation. */
export const JudgementSchema = z.strictObject({
  v: z.literal(1),
  /** The leader Lease's holderIdentity of the writer. */
  leader: z.string().min(1).max(256).regex(/^[\x21-\x7e]+$/),
  /** Grows by one at every write of this leader. */
  seq: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  hosts: z.array(z.strictObject({
    host: hostName,
    freshness: z.enum(["fresh", "silent", "unobserved"]),
    /** Ms before the write since the leader saw the heartbeat change (or first read it). */
    age_ms: z.number().int().nonnegative().max(10 * 365 * 86_400_000),
    /** Whether the leader saw it change (else `age_ms` is since its first read). */
    seen: z.boolean(),
    /** The heartbeat Lease's resourceVersion the judgement is of. */
    rv: z.string().max(64).regex(/^[\x21-\x7e]*$/),
  })).max(MAX_JUDGED_HOSTS),
  /** Hosts left out at the bound. */
  omitted: z.number().int().positive().optional(),
  /**
   * The serving hosts of the leader's inventory (`servingHostNames`: the control-plane machines
   * and the workers a pool selects, not retired): each should report, so a reader without the
   * inventory can tell one that never did. The name is older than workers serving pools (older
   * leaders list the control-plane machines only); absent from still older leaders.
   */
  control_plane: z.array(hostName).max(MAX_JUDGED_HOSTS).optional(),
  /** The control-plane VIPs of the leader's inventory: served with no Service. */
  control_plane_vips: z.array(ip).max(64).optional(),
  /** Per VIP, fresh hosts still listing it whose claim is superseded. */
  superseded: z.array(z.strictObject({ vip: ip, hosts: z.array(hostName).min(1).max(64) }))
    .max(MAX_SUPERSEDED_VIPS),
});

/** The leader's judgement, as published. */
export type Judgement = z.infer<typeof JudgementSchema>;

/**
 * The judgement of `heartbeats` as the leader writes it.
 * @param heartbeats every heartbeat, judged by the leader's observer now
 * @param leader the leader's identity
 * @param seq this write's sequence number
 * @param servingHosts the serving hosts of the leader's inventory (`servingHostNames`)
 * @param controlPlaneVips the control-plane VIPs of the leader's inventory
 * @returns the judgement, within its bounds
 */
export function judgementOf(
  heartbeats: readonly Heartbeat[],
  leader: string,
  seq: number,
  servingHosts: readonly string[] = [],
  controlPlaneVips: readonly string[] = [],
): Judgement {
  const sorted = [...heartbeats].sort((a, b) => compareCodeUnits(a.host, b.host));
  const superseded: Judgement["superseded"] = [];
  for (const [vip, claims] of vipClaims(heartbeats)) {
    if (claims.superseded.length > 0 && superseded.length < MAX_SUPERSEDED_VIPS) {
      superseded.push({ vip, hosts: claims.superseded.slice(0, 64) });
    }
  }
  const hosts = sorted.slice(0, MAX_JUDGED_HOSTS).map((h) => ({
    host: h.host,
    freshness: h.observed.freshness,
    age_ms: Math.min(Math.round(h.observed.ageMs), 10 * 365 * 86_400_000),
    seen: h.observed.changeSeen,
    rv: h.resourceVersion,
  }));
  const omitted = sorted.length - hosts.length;
  const vips = [...new Set(controlPlaneVips.map((v) => canonicalIp(v)))].filter((v) =>
    v !== undefined
  ).slice(0, 64);
  const mustReport = [...servingHosts].sort(compareCodeUnits).slice(0, MAX_JUDGED_HOSTS);
  return {
    v: 1,
    leader,
    seq,
    hosts,
    ...(omitted > 0 ? { omitted } : {}),
    ...(mustReport.length > 0 ? { "control_plane": mustReport } : {}),
    ...(vips.length > 0 ? { "control_plane_vips": vips } : {}),
    superseded,
  };
}

/**
 * Parses an annotation value strictly.
 * @param text the annotation
 * @returns the judgement, or why it is not one
 */
export function decodeJudgement(text: string): Judgement | { error: string } {
  if (text.length > MAX_JUDGEMENT_BYTES) {
    return { error: `larger than ${MAX_JUDGEMENT_BYTES} bytes` };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { error: "not JSON" };
  }
  const parsed = JudgementSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { error: `${issue?.path.join(".") || "(root)"}: ${issue?.message ?? "invalid"}` };
  }
  return parsed.data;
}

/**
 * The judgement a Lease carries, when it is one that names `holder`.
 * @param lease the publication Lease as read (undefined when absent)
 * @param holder the leader Lease's holderIdentity in the same read
 * @returns the judgement, or undefined
 */
export function judgementFor(
  lease: V1Lease | undefined,
  holder: string | undefined,
): Judgement | undefined {
  const text = lease?.metadata?.annotations?.[JUDGEMENT_ANNOTATION];
  if (!holder || typeof text !== "string") return undefined;
  const judgement = decodeJudgement(text);
  return "error" in judgement || judgement.leader !== holder ? undefined : judgement;
}

/**
 * Whether a reader may use the leader's judgement: two of its reads, each with the leader Lease's
 * holder and the publication naming it, and the sequence number changed between them.
 * @param before the earlier read's judgement (`judgementFor`)
 * @param after the later read's
 * @returns true when trusted
 */
export function trustJudgement(
  before: Judgement | undefined,
  after: Judgement | undefined,
): boolean {
  return before !== undefined && after !== undefined && before.leader === after.leader &&
    after.seq !== before.seq;
}

/**
 * Heartbeats judged by the leader instead of this reader: each host the judgement lists takes
 * its freshness and age, aged by `sinceMs` (at most how long ago the judgement was written, by
 * this reader's clock); a heartbeat whose resourceVersion differs from the judged one was renewed
 * after the judgement, so within `sinceMs`. Hosts the judgement does not list keep this reader's
 * own observation.
 * @param heartbeats the heartbeats as this reader read and judged them
 * @param judgement the trusted judgement
 * @param sinceMs the bound on the judgement's age
 * @param nowMs this reader's monotonic clock now
 * @returns the heartbeats with the leader's observations
 */
export function withLeaderJudgement(
  heartbeats: readonly Heartbeat[],
  judgement: Judgement,
  sinceMs: number,
  nowMs: number,
): Heartbeat[] {
  const byHost = new Map(judgement.hosts.map((h) => [h.host, h]));
  return heartbeats.map((h) => {
    const judged = byHost.get(h.host);
    if (!judged) return h;
    let observed: Observation;
    if (judged.rv !== h.resourceVersion) {
      observed = {
        freshness: "fresh",
        ageMs: sinceMs,
        changeSeen: true,
        changedAtMs: nowMs - sinceMs,
        memberSince: new Map(),
      };
    } else {
      const ageMs = judged.age_ms + sinceMs;
      const durationMs = h.durationMs;
      const freshness = judged.freshness === "fresh" && ageMs > durationMs
        ? "silent"
        : judged.freshness === "unobserved" && ageMs > durationMs
        ? "silent"
        : judged.freshness;
      observed = {
        freshness,
        ageMs,
        changeSeen: judged.seen,
        changedAtMs: judged.seen ? nowMs - ageMs : undefined,
        memberSince: new Map(),
      };
    }
    return { ...h, observed };
  });
}

/**
 * The claims the leader holds superseded, by VIP.
 * @param judgement the trusted judgement
 * @returns VIP -> hosts
 */
export function supersededByLeader(judgement: Judgement): Map<string, Set<string>> {
  return new Map(judgement.superseded.map((s) => [s.vip, new Set(s.hosts)]));
}
