/**
 * The withdrawal state machine both announcers share: a reload takes this host out of announcing
 * (keepalived: out of VRRP, `keepalived/withdrawal.ts`; BIRD: `[bgp]` removed), the announcer
 * gives its daemon a file announcing nothing, and comes back when the host announces again. The
 * phase decides what is retried and what the log says once. Pure.
 *
 * @module
 */

/**
 * Where an announcer stands with a withdrawal: `serving` (none, or its end confirmed by a file
 * its daemon took), `withdrawn` (the file announcing nothing taken, and confirmed), `failed` (not
 * taken, not rendered, or not confirmed: retried), `returning` (the host announces again, no file
 * taken since; said once one is).
 */
export type WithdrawalPhase = "serving" | "withdrawn" | "failed" | "returning";

/** What happens to the announcer that moves it between phases. */
export type WithdrawalEvent =
  /** A withdrawal was applied: confirmed (taken, VIPs gone) or not. */
  | { kind: "withdrew"; confirmed: boolean }
  /** A render found the host announcing again (whether or not the render and apply succeed). */
  | { kind: "back" }
  /** The daemon took a file announcing. */
  | { kind: "file-taken" };

/**
 * An announcer's next withdrawal phase.
 * @param phase where it stands
 * @param event what happened
 * @returns where it stands after
 */
export function nextWithdrawalPhase(
  phase: WithdrawalPhase,
  event: WithdrawalEvent,
): WithdrawalPhase {
  switch (event.kind) {
    case "withdrew":
      return event.confirmed ? "withdrawn" : "failed";
    case "back":
      // no withdrawal to retry any more
      return phase === "withdrawn" || phase === "failed" ? "returning" : phase;
    case "file-taken":
      return phase === "returning" ? "serving" : phase;
  }
}
