/**
 * Which inventory each host runs, as `keelson plan` shows it: every heartbeat carries the
 * SHA-256 of the inventory file in force on its host (`host_report.ts` `inventory`); the plan
 * compares them with the files it was given, so the hosts still on another file are named before
 * a change is rolled out (and the ones already on the proposed file). One read judges no
 * freshness: a heartbeat as it was last written.
 *
 * @module
 */
import type { V1Lease } from "@kubernetes/client-node";
import { parseHeartbeatLease } from "../status/heartbeats.ts";
import { shortDigest } from "../status/inventory_agreement.ts";
import { compareCodeUnits } from "../text/code_unit_order.ts";

/** One host's inventory, as its heartbeat reports it. */
export interface HostInventory {
  host: string;
  /** SHA-256 of its inventory file; null when its report has none (an older version). */
  sha256: string | null;
  /** What that file is to this plan. */
  is: "current" | "proposed" | "other" | "unreported";
}

/** The hosts' inventories against the plan's files (`-o json`: `inventories`). */
export interface PlanInventories {
  /** SHA-256 of the inventory in force (`--current`); null with `--current none`. */
  current: string | null;
  /** SHA-256 of the proposed inventory. */
  proposed: string;
  /** Every host with a readable heartbeat, sorted. */
  hosts: HostInventory[];
}

/**
 * Compares the hosts' inventories with the plan's files.
 * @param leases the Leases read (others than heartbeats are ignored)
 * @param files the digests of the inventory in force (if any) and the proposed one
 * @returns the comparison
 */
export function planInventories(
  leases: readonly V1Lease[],
  files: { current: string | null; proposed: string },
): PlanInventories {
  const hosts: HostInventory[] = [];
  for (const h of leases.map(parseHeartbeatLease)) {
    if (h === undefined || "error" in h.report) continue;
    const sha256 = h.report.inventory?.sha256 ?? null;
    hosts.push({
      host: h.host,
      sha256,
      is: sha256 === null
        ? "unreported"
        : sha256 === files.current
        ? "current"
        : sha256 === files.proposed
        ? "proposed"
        : "other",
    });
  }
  hosts.sort((a, b) => compareCodeUnits(a.host, b.host));
  return { ...files, hosts };
}

/**
 * The lines the text plan shows: nothing while every host runs the inventory in force (or, with
 * none in force, the proposed one).
 * @param inventories from `planInventories`
 * @param paths the two files as named
 * @returns lines, each host name a validated machine name
 */
export function formatPlanInventories(
  inventories: PlanInventories,
  paths: { current: string; proposed: string },
): string[] {
  const expected = inventories.current === null ? "proposed" : "current";
  const off = inventories.hosts.filter((h) => h.is !== expected && h.is !== "unreported");
  if (off.length === 0) return [];
  const named = (is: HostInventory["is"]) =>
    off.filter((h) => h.is === is).map((h) =>
      is === "other" ? `${h.host} (sha256 ${shortDigest(h.sha256!)})` : h.host
    );
  const lines = ["", "Hosts not on the inventory in force:"];
  const others = named("other");
  if (others.length > 0) {
    lines.push(
      `  on another file than ${inventories.current === null ? paths.proposed : paths.current}: ${
        others.join(", ")
      }`,
    );
  }
  const proposed = named("proposed");
  if (proposed.length > 0 && expected === "current") {
    lines.push(`  already on the proposed ${paths.proposed}: ${proposed.join(", ")}`);
  }
  const current = named("current");
  if (current.length > 0 && expected === "proposed") {
    lines.push(`  on ${paths.current}: ${current.join(", ")}`);
  }
  return lines;
}
