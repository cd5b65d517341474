/**
 * When this host must serve no VIP through keepalived although the keepalived Keelson drives keeps
 * running: a reload turned `[keepalived] enabled` off, gave the machine another role, removed it,
 * or retired it. The other hosts then render their files without it (with unicast VRRP they no
 * longer list it as a peer nor hear its adverts), so a keepalived left with the old file would be
 * a second MASTER for the same VIPs, and its VIPs would no longer follow the Services. The
 * announcer gives keepalived a file with no VRRP instance instead (`renderWithdrawnConfig`).
 *
 * `maintenance` and `shutdown` machines stay VRRP peers, as the model and `keelson check` treat
 * them: only a retired machine leaves the peer set.
 *
 * @module
 */
import { runsKeepalived } from "../../../src/config/restart_settings.ts";
import type { Config } from "../../../src/config/types.ts";

/** Why this host serves no VIP through keepalived. */
export interface KeepalivedWithdrawal {
  /** For the log, e.g. `machine "cp-1" is retired`. */
  reason: string;
  /**
   * Whether keelson itself must restart to apply it (keepalived's side is start-only: after the
   * restart it is no longer started on this host). False for a retired machine: the side keeps
   * running and serves again when the machine is active again.
   */
  restartNeeded: boolean;
}

/**
 * Why `host` must serve no VIP through keepalived under `config`.
 * @param config the configuration in force (as reloaded: `[keepalived] enabled` is not pinned)
 * @param host this host's machine name
 * @returns the reason, or undefined while the host is an active VRRP peer
 */
export function keepalivedWithdrawal(
  config: Config,
  host: string,
): KeepalivedWithdrawal | undefined {
  const restartNeeded = !runsKeepalived(config, host);
  if (!config.keepalived.enabled) {
    return { reason: "[keepalived] enabled = false", restartNeeded };
  }
  const machine = config.machines.find((m) => m.name === host);
  if (!machine) {
    return { reason: `machine "${host}" is no longer in the inventory`, restartNeeded };
  }
  if (machine.role !== "control-plane") {
    return { reason: `machine "${host}" now has role "${machine.role}"`, restartNeeded };
  }
  if (machine.state === "retired") {
    return { reason: `machine "${host}" is retired`, restartNeeded };
  }
  return undefined;
}

/**
 * Where the announcer stands with a withdrawal: `serving` (none, or its end confirmed by a file
 * with instances that keepalived took), `withdrawn` (the file without instances taken and the
 * VIPs seen leaving), `failed` (not taken, not rendered, or a VIP stayed: retried), `returning`
 * (back in VRRP, no file with instances taken since; said once one is).
 */
export type WithdrawalPhase = "serving" | "withdrawn" | "failed" | "returning";

/** What happens to the announcer that moves it between phases. */
export type WithdrawalEvent =
  /** A withdrawal was applied: confirmed (taken, VIPs gone) or not. */
  | { kind: "withdrew"; confirmed: boolean }
  /** A render found the host in VRRP again (whether or not the render and apply succeed). */
  | { kind: "back-in-vrrp" }
  /** keepalived took a file with instances. */
  | { kind: "file-taken" };

/**
 * The announcer's next withdrawal phase.
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
    case "back-in-vrrp":
      // no withdrawal to retry any more
      return phase === "withdrawn" || phase === "failed" ? "returning" : phase;
    case "file-taken":
      return phase === "returning" ? "serving" : phase;
  }
}
