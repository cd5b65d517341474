/**
 * What the agent does when its host side (keepalived, BIRD, the VRRP state tracker) stops on its
 * own: it stops as on SIGTERM and exits 1, so systemd (`Restart=always`, `RestartSec=2s`) or the
 * kubelet starts a fresh one; from that moment /healthz, /livez and /readyz fail too
 * (`hostSide`).
 *
 * Why exit rather than only fail a health check: on a bare-metal host nothing watches /healthz
 * (the unit has no probe), and a process that stays up with its host side gone leaves keepalived
 * and BIRD serving a file nobody updates, while every other sign says the agent is fine.
 * Upstream cloud-controller-managers exit on fatal errors the same way. A restart loop cannot come
 * from a known misconfiguration: `keelson check` (ExecStartPre) refuses paths the binary may not
 * write, and the host side logs and retries the conditions it knows (a file it cannot write, a
 * daemon not running) instead of stopping. What is left is unexpected, where a fresh process is
 * the remedy; a stop on the agent's own signal is no failure.
 *
 * @module
 */
import { logger } from "../log/logging.ts";
import type { HealthChecks } from "../server/health_checks.ts";

/** The exit code after the host side stopped on its own. */
export const EXIT_HOST_SIDE_STOPPED = 1;

/** What `watchHostSide` gives the agent. */
export interface HostSideWatch {
  /** Aborts when the host side stopped on its own: the agent then stops. */
  signal: AbortSignal;
  /**
   * The agent's exit code.
   * @param stopCode what the stop sequence returned
   * @returns `EXIT_HOST_SIDE_STOPPED` after a host-side stop, else `stopCode`
   */
  code(stopCode: number): number;
}

/**
 * Watches the host side's early-stop promise (`RunningHostSide.stopped`) and registers the
 * `hostSide` health check.
 * @param stopped resolves with what happened when a part stopped on its own
 * @param signal the agent's stop signal: a part ending after it is no failure
 * @param health the process's health checks
 * @returns the stop signal and the exit code
 */
export function watchHostSide(
  stopped: Promise<Error> | undefined,
  signal: AbortSignal,
  health: HealthChecks,
): HostSideWatch {
  const controller = new AbortController();
  let failure: Error | undefined;
  health.add("hostSide", () => failure ? { ok: false, reason: failure.message } : { ok: true });
  stopped?.then((error) => {
    if (signal.aborted) return;
    failure = error;
    logger("agent").fatal("{error}; stopping, to be restarted (exit code {code})", {
      error: error.message,
      code: EXIT_HOST_SIDE_STOPPED,
    });
    controller.abort();
  });
  return {
    signal: controller.signal,
    code: (stopCode) => failure ? EXIT_HOST_SIDE_STOPPED : stopCode,
  };
}
