/**
 * The heartbeat report's schema as agents before `announcements` read it, frozen here so that a
 * test can prove a new writer's report is still one they accept: keepalived's instances in
 * VRRP's words are required, an entry with a field they do not know is refused, an unknown field
 * at the top or in `reload` is dropped. `keepalivedRequired`: as agents before `announcers` read
 * it, when `reload.keepalived` was required too. A copy on purpose: it must not follow the code.
 */
import * as z from "zod/v4";
import { BGP_NAME_REGEXP } from "../../../src/config/bgp_schema.ts";
import { NAME_REGEXP } from "../../../src/config/schema.ts";
import { canonicalIp } from "../../../src/net/ip.ts";

const isoTime = z.iso.datetime({ offset: true });
const ip = z.string().max(45).refine((v) => canonicalIp(v) === v, "not a canonical IP");
const APPLY = ["success", "invalid", "error", "unchanged", "not_running", "none"] as const;

/** What the tests read of a report an older reader parsed. */
export interface PreviousReport {
  instances: { name: string; state: string; source: string; since: string; vips: string[] }[];
}

/**
 * The schema an older reader parses a report with.
 * @param options whether `reload.keepalived` is required (readers before `announcers`)
 * @returns the schema
 */
export function previousReportSchema(
  options: { keepalivedRequired: boolean },
): z.ZodType<PreviousReport> {
  const keepalived = z.enum(APPLY);
  return z.object({
    v: z.literal(1),
    host: z.string().regex(NAME_REGEXP).max(63),
    version: z.string().regex(/^[0-9A-Za-z.+-]{1,64}$/),
    instances: z.array(z.strictObject({
      name: z.string().regex(/^[A-Za-z0-9_.:-]{1,64}$/),
      state: z.enum(["MASTER", "BACKUP", "FAULT", "STOP", "UNKNOWN"]),
      source: z.enum(["fifo", "addresses"]),
      since: isoTime,
      vips: z.array(ip).max(4096),
    })).max(1024),
    vips: z.array(z.strictObject({ ip, since: isoTime })).max(4096),
    reload: z.object({
      ok: z.boolean(),
      at: isoTime.optional(),
      keepalived: options.keepalivedRequired ? keepalived : keepalived.optional(),
      restart: z.array(z.string()).min(1).max(64).optional(),
    }),
    inventory: z.strictObject({ sha256: z.string().regex(/^[0-9a-f]{64}$/), since: isoTime })
      .optional(),
    pools: z.array(z.strictObject({
      pool: z.string().regex(NAME_REGEXP).max(63),
      family: z.enum(["IPv4", "IPv6"]),
      total: z.number().nonnegative(),
      used: z.number().int().nonnegative(),
    })).max(256),
    ...(options.keepalivedRequired ? {} : {
      announcers: z.array(z.strictObject({
        name: z.string().regex(/^[a-z][a-z0-9_-]{0,31}$/),
        apply: z.enum(APPLY),
      })).max(16).optional(),
    }),
    bgp: z.array(z.strictObject({
      peer: z.string().regex(BGP_NAME_REGEXP),
      established: z.boolean(),
      routes: z.array(z.string().max(49)).max(16384),
    })).max(256).optional(),
    omitted: z.strictObject({
      instances: z.number().int().positive().optional(),
      instance_vips: z.number().int().positive().optional(),
      vips: z.number().int().positive().optional(),
      pools: z.number().int().positive().optional(),
      peers: z.number().int().positive().optional(),
      routes: z.number().int().positive().optional(),
      restart: z.number().int().positive().optional(),
      power: z.number().int().positive().optional(),
    }).optional(),
  });
}
