/**
 * keepalived's file for `keelson render keepalived`: the file one serving host would run
 * once the agent has converged on a cluster snapshot. The VIPs are the ingress addresses of the
 * Services Keelson handles, with the addresses `keelson plan` would give the pending ones; the
 * text comes from the pipeline the running announcer applies (`keepalivedHostFile`), fed from
 * the snapshot instead of the caches. Offline: writes nothing.
 *
 * @module
 */
import type { HostFileRequest, HostFileResult } from "../../../src/cloud/host_file.ts";
import type { Config } from "../../../src/config/types.ts";
import { convergedServices } from "../ipam/plan_allocations.ts";
import { keepalivedHostFile } from "./announcer.ts";
import { nodeIsReady } from "../serving_hold.ts";
import { USER_NAME_REGEXP } from "./render.ts";
import { runsKeepalived } from "../../../src/config/restart_settings.ts";

/** The help text of `keelson render keepalived` (also `keelson render --help`). */
export const KEEPALIVED_RENDER_USAGE =
  `Usage: keelson render keepalived --config FILE --host NAME [--state SNAPSHOT]
       keelson render bird --config FILE --host NAME [--state SNAPSHOT] [--show-secrets]
         (BIRD's configuration for the host; "keelson render bird --help" for its flags)

Prints the keepalived configuration file that Keelson would keep on host NAME: the
control-plane VIP from the inventory (control-plane hosts) and, with --state, the VIPs of the
LoadBalancer Services Keelson handles in the VRRP pools NAME serves (their current ingress
addresses plus what "keelson plan" would allocate to pending ones). A retired machine gets a
file with no VRRP instance, one in maintenance or shutdown none of its own, and one whose Node is
NotReady in the snapshot no Service instance, as "keelson run" gives them. Nothing is written
anywhere.

Flags:
  -c, --config FILE      the inventory (env KEELSON_CONFIG)
      --host NAME        a control-plane machine, or one a VRRP pool's served_by selects
                         (env KEELSON_HOST)
  -s, --state SNAPSHOT   a saved cluster state, YAML or JSON (optional; without it only the
                         control-plane VIP is rendered):
                         kubectl get nodes,services -A -o yaml > state.yaml
      --fifo-user NAME   the user keelson run runs as, owner of keepalived's notify FIFO
                         (default keelson, as deploy/systemd/keelson.service)
  -h, --help             print this help

Exit codes: 0 printed, 1 invalid inventory, unreadable snapshot or a host that cannot run
keepalived, 2 wrong command line.`;

/** The user `keelson run` runs as when none is named (deploy/systemd/keelson.service). */
const DEFAULT_RUN_AS_USER = "keelson";

/**
 * One host's keepalived file from the inventory and a snapshot.
 * @param request the host, the snapshot and the user keepalived's notify FIFO is made for
 * @param config the validated inventory
 * @returns the text with notes on what was left out, or why it cannot be rendered
 */
export function renderKeepalivedFile(request: HostFileRequest, config: Config): HostFileResult {
  const { host, configFile } = request;
  const problem = hostProblem(config, configFile, host);
  if (problem) return { error: problem };
  const fifoUser = request.runAsUser ?? DEFAULT_RUN_AS_USER;
  if (!USER_NAME_REGEXP.test(fifoUser)) {
    return { error: `--fifo-user "${fifoUser}" is not a user name`, usage: true };
  }
  const snapshot = request.snapshot;
  const rendered = keepalivedHostFile({
    config,
    host,
    services: convergedServices(config, snapshot?.services ?? []),
    notifyFifoUser: fifoUser,
    nodeReady: nodeIsReady(snapshot?.nodes.find((n) => n.metadata?.name === host)),
  });
  if ("error" in rendered) return { error: rendered.error };
  const notes: string[] = [];
  if (rendered.withdrawal) {
    // hostProblem refused the hosts that never drive keepalived; what is left is a retired one,
    // given what `keelson run` gives its keepalived at a reload
    notes.push(
      `Host "${host}" serves no VIP through keepalived (${rendered.withdrawal.reason} in ` +
        `${configFile}): this file has no VRRP instance; the other control-plane hosts no longer ` +
        `peer with it`,
    );
  }
  if (rendered.withheld) {
    const what = rendered.withheld.controlPlane
      ? "no VRRP instance"
      : "no Service VRRP instance (the control-plane VIP follows the apiserver)";
    notes.push(
      `Host "${host}" holds its VIPs back: ${rendered.withheld.reason}; this file has ${what}, ` +
        "and the other hosts keep it as a peer (as keelson run renders it)",
    );
  }
  for (const { service, value, reason } of rendered.skipped) {
    notes.push(`Not serving "${value}"${service ? ` of service "${service}"` : ""}: ${reason}`);
  }
  return { text: rendered.text, notes };
}

function hostProblem(config: Config, configPath: string, host: string): string | undefined {
  const controlPlane = config.machines.filter((m) => m.role === "control-plane")
    .map((m) => `"${m.name}"`).join(", ") || "none";
  const machine = config.machines.find((m) => m.name === host);
  if (!config.keepalived.enabled) {
    return `Cannot render keepalived: ${configPath} sets [keepalived] enabled = false, so ` +
      `Keelson drives keepalived on no host (a reload that turns it off gives the keepalived ` +
      `a running keelson drives a file with no VRRP instance)`;
  }
  if (!machine) {
    return `Cannot render keepalived for host "${host}": ${configPath} has no machine of that ` +
      `name (control-plane machines: ${controlPlane})`;
  }
  if (!runsKeepalived(config, host)) {
    return `Cannot render keepalived for host "${host}": its role is "${machine.role}" and no ` +
      `VRRP pool's served_by selects it, and only those machines and the control-plane ones ` +
      `run keepalived (control-plane machines: ${controlPlane})`;
  }
  return undefined;
}
