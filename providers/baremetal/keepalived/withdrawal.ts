/**
 * When this host must serve no VIP through keepalived although the keepalived Keelson drives keeps
 * running: a reload turned `[keepalived] enabled` off, gave the machine another role or left it
 * out of every VRRP pool's `served_by` (a worker), removed it, or retired it. The other hosts then render their files without it (with unicast VRRP they no
 * longer list it as a peer nor hear its adverts), so a keepalived left with the old file would be
 * a second MASTER for the same VIPs, and its VIPs would no longer follow the Services. The
 * announcer gives keepalived a file with no VRRP instance instead (`renderWithdrawnConfig`).
 *
 * `maintenance` and `shutdown` machines stay VRRP peers in the other hosts' files: only a retired
 * machine leaves the peer set. They hold their VIPs back in their own file instead
 * (`serving_hold.ts`), as a host whose Node is not Ready holds back its Service VIPs.
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
  if (!runsKeepalived(config, host)) {
    // not a control-plane machine, and no VRRP pool's served_by selects it
    return { reason: `machine "${host}" now has role "${machine.role}"`, restartNeeded };
  }
  if (machine.state === "retired") {
    return { reason: `machine "${host}" is retired`, restartNeeded };
  }
  return undefined;
}
