/**
 * Whether every host runs the same inventory: each heartbeat carries the SHA-256 of the inventory
 * file in force on its host (`host_report.ts` `inventory`). The hosts are compared with one
 * reference: the leader's digest (its controllers act on its inventory), or, without a leader's,
 * the digest most fresh hosts run when one digest has more hosts than any other. Only fresh,
 * readable heartbeats count: a silent host runs nothing that matters now, and its own alert says
 * so. Shared by the leader (Event, metric) and `keelson status` and `keelson plan`.
 *
 * @module
 */
import type { HostReport } from "./host_report.ts";
import { compareCodeUnits } from "../text/code_unit_order.ts";

/** One host's heartbeat, as far as this needs it. */
export interface InventoryReport {
  host: string;
  /** Whether its heartbeat counts now (fresh by the reader's observation). */
  fresh: boolean;
  report: HostReport | { error: string };
}

/** One host on another inventory than the reference. */
export interface OtherInventory {
  host: string;
  sha256: string;
  /** When it took effect on that host, by that host's clock (ISO). */
  since: string;
}

/** The hosts compared. */
export interface InventoryAgreement {
  /** The digest the hosts are compared with, and where it comes from; undefined when none. */
  reference:
    | { sha256: string; from: "leader" | "most-hosts"; host: string | undefined }
    | undefined;
  /** Fresh hosts reporting another digest, sorted by host. */
  others: OtherInventory[];
  /** Fresh, readable hosts reporting no digest (older versions), sorted. */
  unreported: string[];
  /** Fresh hosts per digest, for the metric. */
  hostsByDigest: Map<string, string[]>;
}

/**
 * Compares the fresh hosts' inventories.
 * @param heartbeats every host's heartbeat with its freshness
 * @param leaderHost the leader's host when known (its digest is the reference)
 * @returns the reference and the hosts that differ from it
 */
export function inventoryAgreement(
  heartbeats: readonly InventoryReport[],
  leaderHost: string | undefined,
): InventoryAgreement {
  const hostsByDigest = new Map<string, string[]>();
  const since = new Map<string, string>();
  const unreported: string[] = [];
  for (const h of heartbeats) {
    if (!h.fresh || "error" in h.report) continue;
    const inventory = h.report.inventory;
    if (!inventory) {
      unreported.push(h.host);
      continue;
    }
    hostsByDigest.set(inventory.sha256, [...hostsByDigest.get(inventory.sha256) ?? [], h.host]);
    since.set(h.host, inventory.since);
  }
  for (const hosts of hostsByDigest.values()) hosts.sort(compareCodeUnits);
  let reference: InventoryAgreement["reference"];
  const leaderDigest = [...hostsByDigest].find(([, hosts]) => hosts.includes(leaderHost ?? ""));
  if (leaderDigest) {
    reference = { sha256: leaderDigest[0], from: "leader", host: leaderHost };
  } else {
    const ranked = [...hostsByDigest].sort((a, b) => b[1].length - a[1].length);
    if (ranked.length > 0 && (ranked.length === 1 || ranked[0]![1].length > ranked[1]![1].length)) {
      reference = { sha256: ranked[0]![0], from: "most-hosts", host: undefined };
    }
  }
  const others: OtherInventory[] = [];
  for (const [sha256, hosts] of hostsByDigest) {
    if (reference && sha256 === reference.sha256) continue;
    // without a reference (a tie), every host is on "another" inventory than some other host
    for (const host of hosts) others.push({ host, sha256, since: since.get(host)! });
  }
  others.sort((a, b) => compareCodeUnits(a.host, b.host));
  return { reference, others, unreported: unreported.sort(compareCodeUnits), hostsByDigest };
}

/**
 * A digest as people read it: its first 12 hex digits (as `sha256sum` prints it, cut).
 * @param sha256 the digest
 * @returns e.g. `3f5a0c9e1b2d`
 */
export function shortDigest(sha256: string): string {
  return sha256.slice(0, 12);
}
