/**
 * Whether a Redfish ComputerSystem is the inventory's machine, judged from what the system reports
 * of itself against the machine's id (`id`, or its name when `id` is absent: the providerID's
 * part, which the inventory documents as the serial number or asset tag).
 *
 * - **confirmed**: its `SerialNumber` or `AssetTag` (trimmed, ASCII case ignored), or its `UUID`,
 *   equals the machine's id;
 * - **contradicted**: it reports a `SerialNumber` or an `AssetTag`, and none of the three equals
 *   the id: the system is another machine's (a copied endpoint or system path, a renumbered BMC),
 *   and its power is not this machine's;
 * - **silent**: it reports neither (or only a firmware placeholder such as "To Be Filled By
 *   O.E.M."), and its UUID is not the id: nothing proves or contradicts it.
 *
 * A UUID that differs contradicts nothing: every system reports one and inventories rarely use it
 * as the id.
 *
 * @module
 */

/** What a system reports of its identity (each may be absent or null). */
export interface ReportedIdentity {
  SerialNumber?: string | null | undefined;
  AssetTag?: string | null | undefined;
  UUID?: string | null | undefined;
}

/** The verdict on one system. */
export type IdentityVerdict =
  | { kind: "confirmed"; by: "SerialNumber" | "AssetTag" | "UUID" }
  | { kind: "contradicted"; reported: string }
  | { kind: "silent" };

// what firmware leaves in SMBIOS when the vendor wrote nothing: not an identity
const PLACEHOLDERS = new Set([
  "to be filled by o.e.m.",
  "default string",
  "not specified",
  "not applicable",
  "not available",
  "system serial number",
  "chassis serial number",
  "serial number",
  "none",
  "n/a",
  "na",
  "unknown",
  "null",
  "0123456789",
  "123456789",
]);

/** The longest reported value quoted in a message. */
const MAX_QUOTED = 64;

/**
 * A reported value as compared: trimmed, ASCII letters lower-cased; undefined when absent, empty,
 * a placeholder, or all zeros.
 */
function meaningful(value: string | null | undefined): string | undefined {
  if (typeof value !== "string") return undefined;
  const trimmed = value.trim().replace(/[A-Z]/g, (c) => c.toLowerCase());
  if (trimmed === "" || PLACEHOLDERS.has(trimmed) || /^[0\s-]+$/.test(trimmed)) return undefined;
  return trimmed;
}

/**
 * Judges one system against the machine's id.
 * @param reported what the system reports
 * @param machineId the machine's id (`id`, or its name)
 * @returns confirmed, contradicted (with the values it reports, quoted safely) or silent
 */
export function judgeIdentity(reported: ReportedIdentity, machineId: string): IdentityVerdict {
  const want = meaningful(machineId);
  const serial = meaningful(reported.SerialNumber);
  const tag = meaningful(reported.AssetTag);
  if (want !== undefined) {
    if (serial === want) return { kind: "confirmed", by: "SerialNumber" };
    if (tag === want) return { kind: "confirmed", by: "AssetTag" };
    if (meaningful(reported.UUID) === want) return { kind: "confirmed", by: "UUID" };
  }
  if (serial === undefined && tag === undefined) return { kind: "silent" };
  const parts: string[] = [];
  if (serial !== undefined) parts.push(`SerialNumber ${quote(reported.SerialNumber!)}`);
  if (tag !== undefined) parts.push(`AssetTag ${quote(reported.AssetTag!)}`);
  return { kind: "contradicted", reported: parts.join(" and ") };
}

/** A BMC's string in a message: printable ASCII only, cut, in double quotes. */
export function quote(value: string): string {
  const cut = value.length > MAX_QUOTED ? `${value.slice(0, MAX_QUOTED)}...` : value;
  return `"${cut.replace(/[^\x20-\x7e]|["\\]/g, "?")}"`;
}
