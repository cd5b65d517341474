/**
 * `keelson status`: where every VIP is right now, from the Kubernetes API alone — the Services'
 * addresses, every host's heartbeat Lease and the leader's Lease. Works from any machine with a
 * kubeconfig that may read Services and Leases.
 *
 * @module
 */
import type { V1Lease, V1Service } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { ConfigError } from "../config/config_error.ts";
import { loadConfigFile } from "../config/load_config.ts";
import { createKubeClient } from "../kube/kube_client.ts";
import { KubeconfigError, resolveConnectionSettings } from "../kube/kubeconfig.ts";
import { buildClusterStatus } from "../status/cluster_status.ts";
import { formatStatusJson, formatStatusText } from "../status/format_status.ts";
import { HEARTBEAT_NAMESPACE } from "../status/host_report.ts";
import { inventoryHosts } from "../status/retired_heartbeats.ts";
import { CONFIG_ENV } from "./check.ts";
import { EXIT_INVALID, EXIT_OK } from "./exit_codes.ts";
import { print, printError } from "./output.ts";
import { readEnv } from "./read_env.ts";
import { parseFlags, UsageError } from "./usage_error.ts";

/** Exit code when the cluster has problems (no host, split brain, silent host ...). */
export const EXIT_PROBLEMS = 3;

const REQUEST_TIMEOUT_MS = 15_000;

const USAGE =
  `Usage: keelson status [--kubeconfig FILE | --config FILE] [--context NAME] [--output text|json]

Shows every VIP with the Service using it, its pool, the host(s) serving it and the VRRP state
on each host, plus the leader, each host's last heartbeat, version and reload state, and pool
usage. Problems (no host, two hosts, a silent host, a failed reload) are listed first.
With the inventory (--config), a silent host that is no longer in it is listed apart as retired,
with the command that deletes its heartbeat, and is not a problem.

Flags:
      --kubeconfig FILE   kubeconfig to use; else [kubernetes] kubeconfig of --config, else
                          $KUBECONFIG (a colon-separated list, merged as kubectl does), else
                          ~/.kube/config, else in-cluster
      --context NAME      the kubeconfig context to use (default: its current-context)
  -c, --config FILE       the inventory: its kubeconfig, leader-election Lease and machines
                          (env ${CONFIG_ENV})
  -o, --output FORMAT     text (default) or json
  -h, --help              print this help

Colours are used only on a terminal, and never when NO_COLOR is set.
Exit codes: 0 healthy, 1 cannot read the cluster, 2 wrong command line, 3 problems found.`;

/**
 * Runs `keelson status`.
 * @param args the arguments after `status`
 * @returns the exit code
 * @throws {UsageError} on a wrong command line
 */
export async function statusCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags(args, {
    kubeconfig: { type: "string" },
    context: { type: "string" },
    config: { type: "string", short: "c" },
    output: { type: "string", short: "o" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) {
    print(USAGE);
    return EXIT_OK;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
  const output = values.output ?? "text";
  if (output !== "text" && output !== "json") {
    throw new UsageError(`--output must be text or json, not "${output}"`);
  }
  let kubeconfig = values.kubeconfig;
  let lease = { namespace: "kube-system", name: "keelson" };
  // the machines of the inventory tell a retired host from a silent one; without it, none is
  let inventory: Set<string> | undefined;
  const configPath = values.config ?? readEnv(CONFIG_ENV);
  if (configPath) {
    try {
      const config = await loadConfigFile(configPath);
      kubeconfig ??= config.kubernetes.kubeconfig;
      lease = { namespace: config.leader_election.namespace, name: config.leader_election.name };
      inventory = inventoryHosts(config.machines);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      printError(`keelson status: ${error.message}`);
      return EXIT_INVALID;
    }
  }

  let services: V1Service[];
  let leases: V1Lease[];
  let leaderLease: V1Lease | undefined;
  try {
    // kubectl's order, ~/.kube/config included: status is run by people, at their own shell
    const settings = await resolveConnectionSettings({
      kubectlDefaults: true,
      ...(kubeconfig ? { kubeconfig } : {}),
      ...(values.context ? { context: values.context } : {}),
    });
    const client = createKubeClient(settings, {
      registry: new Registry(),
      userAgent: "keelson-status",
    });
    try {
      const signal = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
      const leasePath = (ns: string) => `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`;
      const [svc, beats, leaderList] = await Promise.all([
        client.list("/api/v1/services", { signal }),
        client.list(leasePath(HEARTBEAT_NAMESPACE), { signal }),
        lease.namespace === HEARTBEAT_NAMESPACE
          ? undefined
          : client.list(leasePath(lease.namespace), { signal }),
      ]);
      // raw JSON: the fields read are plain strings and numbers (times are parsed from strings)
      services = svc.items as V1Service[];
      leases = beats.items as V1Lease[];
      leaderLease = ((leaderList ?? beats).items as V1Lease[]).find((l) =>
        l.metadata?.name === lease.name
      );
    } finally {
      client.close();
    }
  } catch (error) {
    const message = error instanceof KubeconfigError || error instanceof Error
      ? error.message
      : String(error);
    printError(`keelson status: ${message}`);
    return EXIT_INVALID;
  }
  const status = buildClusterStatus({
    services,
    leases,
    leaderLease,
    nowMs: Date.now(),
    inventory,
  });
  print(
    output === "json" ? formatStatusJson(status) : formatStatusText(status, { color: useColor() }),
  );
  return status.problems.length > 0 ? EXIT_PROBLEMS : EXIT_OK;
}

/**
 * Colours only on a terminal, and never with NO_COLOR set (https://no-color.org).
 * @returns true when stdout is a terminal and NO_COLOR is unset or empty
 */
export function useColor(): boolean {
  if ((readEnv("NO_COLOR") ?? "") !== "") return false;
  try {
    return Deno.stdout.isTerminal();
  } catch {
    return false;
  }
}
