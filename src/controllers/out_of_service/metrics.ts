/**
 * The out-of-service controller's metrics: taints applied and removed, taints held back by a
 * guard, fencing actions by result, and the terminating Pods of its tainted Nodes it force-deleted. Declared at start (`declareStartupMetrics`) with every
 * label value at zero, so alert rules see the series before the first action.
 *
 * @module
 */
import { Counter, type Registry } from "prom-client";
import { declareOnce } from "../../metrics/registry.ts";

/** Why a taint or fencing action was held back (the `reason` / `result` label values). */
export const HELD_REASONS = ["blocked", "rate_limited"] as const;
/** Fencing results (the `result` label). */
export const FENCING_RESULTS = [
  "powered_off",
  "failed",
  "dry_run",
  "blocked",
  "rate_limited",
] as const;
/**
 * Force deletions of terminating Pods on a Node Keelson took out of service (the `result` label):
 * deleted, already gone or replaced (404 or a uid that no longer matches), or failed.
 */
export const POD_DELETION_RESULTS = ["deleted", "gone", "failed"] as const;
/** One fencing result. */
export type FencingResult = (typeof FENCING_RESULTS)[number];

/** The controller's counters. */
export interface OutOfServiceMetrics {
  /** Out-of-service taints Keelson added. */
  applied: Counter;
  /** Out-of-service taints Keelson removed (only its own). */
  removed: Counter;
  /** Taints a guard held back, by reason (once per power-off episode and Node). */
  held: Counter<"reason">;
  /** Fencing decisions, by result. */
  fencing: Counter<"result">;
  /** Force deletions of terminating Pods on Nodes Keelson took out of service, by result. */
  podDeletions: Counter<"result">;
}

/**
 * Declares the counters on `registry` (once per registry), every label value at zero.
 * @param registry the process's registry
 * @returns the counters
 */
export function outOfServiceMetrics(registry: Registry): OutOfServiceMetrics {
  const applied = declareOnce(
    registry,
    "keelson_out_of_service_taints_applied_total",
    () =>
      new Counter({
        name: "keelson_out_of_service_taints_applied_total",
        help:
          "node.kubernetes.io/out-of-service taints Keelson added to Nodes whose machine is off.",
        registers: [registry],
      }),
  );
  const removed = declareOnce(
    registry,
    "keelson_out_of_service_taints_removed_total",
    () =>
      new Counter({
        name: "keelson_out_of_service_taints_removed_total",
        help: "Out-of-service taints Keelson removed (only those it added) from Nodes Ready again.",
        registers: [registry],
      }),
  );
  const held = declareOnce(registry, "keelson_out_of_service_taints_held_total", () => {
    const counter = new Counter({
      name: "keelson_out_of_service_taints_held_total",
      help: "Out-of-service taints a guard held back, by reason (blocked, rate_limited).",
      labelNames: ["reason"],
      registers: [registry],
    });
    for (const reason of HELD_REASONS) counter.inc({ reason }, 0);
    return counter;
  });
  const fencing = declareOnce(registry, "keelson_power_fencing_actions_total", () => {
    const counter = new Counter({
      name: "keelson_power_fencing_actions_total",
      help: "Fencing decisions (forcing a NotReady Node's machine off), by result.",
      labelNames: ["result"],
      registers: [registry],
    });
    for (const result of FENCING_RESULTS) counter.inc({ result }, 0);
    return counter;
  });
  const podDeletions = declareOnce(
    registry,
    "keelson_out_of_service_pod_deletions_total",
    () => {
      const counter = new Counter({
        name: "keelson_out_of_service_pod_deletions_total",
        help: "Terminating Pods Keelson force-deleted on Nodes it took out of service, at once " +
          "rather than at the pod garbage collector's next pass, by result (deleted, gone, failed).",
        labelNames: ["result"],
        registers: [registry],
      });
      for (const result of POD_DELETION_RESULTS) counter.inc({ result }, 0);
      return counter;
    },
  );
  return { applied, removed, held, fencing, podDeletions };
}
