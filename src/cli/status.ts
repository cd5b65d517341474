/**
 * `keelson status`: where every VIP is right now, from the Kubernetes API alone — the Services'
 * addresses, every host's heartbeat Lease and the leader's Lease. Works from any machine with a
 * kubeconfig that may read Services and Leases.
 *
 * Whether a host or the leader is alive is never judged by a writer's clock (it may be minutes
 * off). The leader has watched every heartbeat all along and publishes its judgement every 500 ms
 * (`leader_judgement.ts`); once this command has seen that publication change under its own eyes,
 * naming the holder of the leader Lease, it answers from it (under a second). Otherwise (no
 * leader, an older leader, no change within 1.5 s) it watches the Leases itself: read again about
 * once a second until each has been seen renewed or has stayed unchanged for its whole lease
 * duration, at most `--observe` (20 s): a heartbeat period (2 s) when every host is alive, the
 * lease (15 s) for a silent host.
 *
 * @module
 */
import type { V1Lease, V1Service } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { ConfigError } from "../config/config_error.ts";
import { loadInventory } from "../config/load_config.ts";
import { servingHostNames } from "../config/pool_serving.ts";
import { canonicalIp } from "../net/ip.ts";
import { createKubeClient } from "../kube/kube_client.ts";
import { resolveConnectionSettings } from "../kube/kubeconfig.ts";
import { ignoredItemsNote } from "../kube/list_items.ts";
import {
  buildClusterStatus,
  type ClusterStatus,
  type StatusInput,
} from "../status/cluster_status.ts";
import { RecordObserver } from "../status/observed_freshness.ts";
import { parseDuration } from "../config/duration.ts";
import { delay } from "../kube/delay.ts";
import { formatStatusJson, formatStatusText } from "../status/format_status.ts";
import { HEARTBEAT_NAMESPACE } from "../status/host_report.ts";
import {
  type Judgement,
  judgementFor,
  judgementLeaseName,
  trustJudgement,
} from "../status/leader_judgement.ts";
import type { RestApi } from "../kube/rest_api.ts";
import { inventoryHosts } from "../status/retired_heartbeats.ts";
import { type PoolServers, poolServersOf } from "../status/pool_servers.ts";
import { CONFIG_ENV } from "./check.ts";
import { EXIT_INVALID, EXIT_OK } from "./exit_codes.ts";
import { print, printError, printStyled } from "./output.ts";
import { readEnv } from "./read_env.ts";
import { parseFlags, UsageError } from "./usage_error.ts";
import { errorMessage } from "../log/error_message.ts";
import { registerBuiltInProviders } from "../../providers/mod.ts";
import { ProviderRegistry } from "../cloud/registry.ts";

/** Exit code when the cluster has problems (no host, split brain, silent host ...). */
export const EXIT_PROBLEMS = 3;

const REQUEST_TIMEOUT_MS = 15_000;
/** Default bound of the watch for renewals. */
const DEFAULT_OBSERVE = "20s";
/** How often the Leases are read again while watching. */
const POLL_MS = 1000;

/** The help text of `keelson status`. */
export const STATUS_USAGE =
  `Usage: keelson status [--kubeconfig FILE | --config FILE] [--context NAME] [--output text|json]
                      [--observe DURATION]

Shows every VIP with the Service using it, its pool, the host(s) serving it and its state on
each host (holding, standby, failed, stopped or unknown), plus the leader, each host's last
heartbeat, version and reload state, and pool usage. Problems (no host, two hosts, a silent host, a failed reload) are listed first.
With the inventory (--config), a silent host that is no longer in it is listed apart as retired,
with the command that deletes its heartbeat, and is not a problem; and each pool's serving hosts
are listed with their Nodes' readiness (when the kubeconfig may list Nodes): a pool that no host
can serve, or a VIP held only by hosts that do not serve its pool, is a problem.

The time written in a Lease is the writer's clock: shown, never trusted. The leader, which has
watched every heartbeat all along, publishes its judgement of them every 500 ms; once this command
has seen that publication change (proof the leader is alive now) it answers from it, in under a
second. Without a leader it watches the Leases itself: a host counts as alive once seen renewed,
as silent once seen unchanged for its lease (about 2 s when every host is alive, up to 15 s
while one is silent).

Flags:
      --kubeconfig FILE   kubeconfig to use; else [kubernetes] kubeconfig of --config, else
                          $KUBECONFIG (a colon-separated list, merged as kubectl does), else
                          ~/.kube/config, else in-cluster
      --context NAME      the kubeconfig context to use (default: its current-context)
  -c, --config FILE       the inventory: its kubeconfig, leader-election Lease and machines
                          (env ${CONFIG_ENV})
  -o, --output FORMAT     text (default) or json
      --observe DURATION  the longest watch for renewals (default ${DEFAULT_OBSERVE}); a Lease not
                          judged by then is shown unconfirmed ("0s": read once, judge nothing,
                          not even by the leader's judgement)
  -h, --help              print this help

Colours are used only on a terminal, and never when NO_COLOR is set.
Exit codes: 0 healthy, 1 cannot read the cluster, 2 wrong command line, 3 problems found.`;

/** The flag table of `keelson status` (node:util parseArgs). */
export const STATUS_FLAGS = {
  kubeconfig: { type: "string" },
  context: { type: "string" },
  config: { type: "string", short: "c" },
  output: { type: "string", short: "o" },
  observe: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/**
 * Runs `keelson status`.
 * @param args the arguments after `status`
 * @returns the exit code
 * @throws {UsageError} on a wrong command line
 */
export async function statusCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags(args, STATUS_FLAGS);
  if (values.help) {
    print(STATUS_USAGE);
    return EXIT_OK;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
  const output = values.output ?? "text";
  if (output !== "text" && output !== "json") {
    throw new UsageError(`--output must be text or json, not "${output}"`);
  }
  const observe = parseDuration(values.observe ?? DEFAULT_OBSERVE);
  if (!observe || observe.ms > 600_000) {
    throw new UsageError(
      `--observe must be a duration of at most 10m such as "20s" or "0s", not "${values.observe}"`,
    );
  }
  let kubeconfig = values.kubeconfig;
  let lease = { namespace: "kube-system", name: "keelson" };
  // the machines of the inventory tell a retired host from a silent one; without it, none is
  let inventory: Set<string> | undefined;
  let known: Pick<StatusInput, "mustReport" | "controlPlaneVips" | "inventorySha256"> = {};
  // the pools' serving hosts, judged with the Nodes' readiness once they are read
  let servingOf: ((nodes: readonly unknown[] | undefined) => PoolServers[]) | undefined;
  const configPath = values.config ?? readEnv(CONFIG_ENV);
  if (configPath) {
    try {
      const { config, sha256 } = await loadInventory(configPath);
      kubeconfig ??= config.kubernetes.kubeconfig;
      lease = { namespace: config.leader_election.namespace, name: config.leader_election.name };
      inventory = inventoryHosts(config.machines);
      known = {
        mustReport: new Set(servingHostNames(config)),
        controlPlaneVips: new Set(
          config.control_plane.vip.map((v) => canonicalIp(v)).filter((v) => v !== undefined),
        ),
        inventorySha256: sha256,
      };
      servingOf = (nodes) => poolServersOf(config, nodes);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      printError(`keelson status: ${error.message}`);
      return EXIT_INVALID;
    }
  }

  const observer = new RecordObserver();
  let status: ClusterStatus;
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
    const ignored = new Map<string, number>();
    const list = async (path: string, signal: AbortSignal) => {
      const read = await client.list(path, { signal });
      if (read.ignored > 0) ignored.set(path, read.ignored);
      return read;
    };
    try {
      const leasePath = (ns: string) => `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`;
      const publicationName = judgementLeaseName(lease.name);
      const readLeases = async (): Promise<LeaseRead> => {
        const signal = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
        const [beats, leaderList] = await Promise.all([
          list(leasePath(HEARTBEAT_NAMESPACE), signal),
          lease.namespace === HEARTBEAT_NAMESPACE
            ? undefined
            : list(leasePath(lease.namespace), signal),
        ]);
        // raw JSON: the fields read are plain strings and numbers (times are parsed from strings)
        const named = (name: string) =>
          ((leaderList ?? beats).items as V1Lease[]).find((l) => l.metadata?.name === name);
        return {
          leases: beats.items as V1Lease[],
          leader: named(lease.name),
          publication: named(publicationName),
        };
      };
      const startedAt = observer.now();
      let nodesUnread: string | undefined;
      const [svc, first, nodeList] = await Promise.all([
        list("/api/v1/services", AbortSignal.timeout(REQUEST_TIMEOUT_MS)),
        readLeases(),
        // readiness only sharpens the serving hosts: a kubeconfig that may not list Nodes still
        // gets the rest of the status
        servingOf
          ? list("/api/v1/nodes", AbortSignal.timeout(REQUEST_TIMEOUT_MS)).catch((error) => {
            nodesUnread = errorMessage(error);
            return undefined;
          })
          : undefined,
      ]);
      if (nodesUnread !== undefined) {
        printError(
          `keelson status: note: the Nodes could not be read (${nodesUnread}); serving hosts ` +
            "are judged from the inventory alone",
        );
      }
      const services = svc.items as V1Service[];
      // the pool each Service's addresses came from, as the provider that records it says
      const providers = new ProviderRegistry();
      registerBuiltInProviders(providers);
      const servingHosts = servingOf?.(nodeList?.items);
      const build = (read: LeaseRead, leaderJudgement?: StatusInput["leaderJudgement"]) =>
        buildClusterStatus({
          services,
          leases: read.leases,
          leaderLease: read.leader,
          observer,
          nowMs: Date.now(),
          inventory,
          poolOf: (service) => providers.recordedPool(service),
          ...known,
          ...(servingHosts ? { servingHosts } : {}),
          ...(leaderJudgement ? { leaderJudgement } : {}),
        });
      status = build(first);
      // the leader's judgement, once this reader saw it change (the leader alive, judging)
      const holder = first.leader?.spec?.holderIdentity || undefined;
      const seen = observe.ms > 0 && judgementFor(first.publication, holder)
        ? await publicationChange(client.rest, {
          namespace: lease.namespace,
          name: publicationName,
          holder: holder!,
          first: judgementFor(first.publication, holder)!,
          firstReadAt: startedAt,
          observer,
          boundMs: Math.min(observe.ms, FAST_BOUND_MS),
        })
        : undefined;
      if (seen) {
        const last = await readLeases();
        const latest = last.leader?.spec?.holderIdentity === holder
          ? judgementFor(last.publication, holder)
          : undefined;
        const judgement = latest && latest.seq !== seen.judgement.seq ? latest : seen.judgement;
        status = build(last, {
          judgement,
          sinceMs: observer.now() - seen.changedAfter,
        });
      }
      // read again until every Lease is judged (seen renewed, or unchanged for its duration):
      // without the leader's judgement, or where it has not judged a host yet (a new leader)
      const deadline = observer.now() + observe.ms;
      while (unconfirmed(status) && observer.now() < deadline) {
        await delay(Math.min(POLL_MS, deadline - observer.now()));
        status = build(await readLeases());
      }
    } finally {
      client.close();
      for (const [path, count] of ignored) {
        printError(`keelson status: note: ${ignoredItemsNote(path, count)}`);
      }
    }
  } catch (error) {
    const message = errorMessage(error);
    printError(`keelson status: ${message}`);
    return EXIT_INVALID;
  }
  if (output === "json") print(formatStatusJson(status));
  else printStyled(formatStatusText(status, { color: useColor() }));
  return status.problems.length > 0 ? EXIT_PROBLEMS : EXIT_OK;
}

/** One read of the Leases status uses. */
interface LeaseRead {
  leases: V1Lease[];
  leader: V1Lease | undefined;
  /** The leader's published judgement (`leader_judgement.ts`), if any. */
  publication: V1Lease | undefined;
}

/** Longest wait for the leader's judgement to change before watching the Leases instead. */
const FAST_BOUND_MS = 1500;
/** How often the judgement is read while waiting for it to change. */
const FAST_POLL_MS = 100;

/**
 * Reads the leader's judgement until its sequence number changes under this reader's eyes
 * (`trustJudgement`), at most `boundMs` after the first read began.
 * @returns the changed judgement and when the read before the change began (this reader's
 *   clock: the judgement was written after it), or undefined when it did not change in time
 */
async function publicationChange(
  rest: RestApi,
  options: {
    namespace: string;
    name: string;
    holder: string;
    first: Judgement;
    firstReadAt: number;
    observer: RecordObserver;
    boundMs: number;
  },
): Promise<{ judgement: Judgement; changedAfter: number } | undefined> {
  const { observer } = options;
  const deadline = options.firstReadAt + options.boundMs;
  const path =
    `/apis/coordination.k8s.io/v1/namespaces/${options.namespace}/leases/${options.name}`;
  let before = options.firstReadAt;
  while (observer.now() < deadline) {
    await delay(Math.min(FAST_POLL_MS, Math.max(0, deadline - observer.now())));
    const readAt = observer.now();
    const signal = AbortSignal.timeout(Math.max(1, deadline - readAt));
    let read: V1Lease;
    try {
      read = await rest.get<V1Lease>(path, `read lease "${options.namespace}/${options.name}"`, {
        signal,
      });
    } catch {
      return undefined; // gone, forbidden or slow: watch the Leases instead
    }
    const judgement = judgementFor(read, options.holder);
    if (judgement === undefined) return undefined;
    if (trustJudgement(options.first, judgement)) return { judgement, changedAfter: before };
    before = readAt;
  }
  return undefined;
}

/** Whether some Lease is still unconfirmed: neither seen renewed nor silent for its duration. */
function unconfirmed(status: ClusterStatus): boolean {
  return status.hosts.some((h) => h.freshness === "unobserved") ||
    (status.leader.identity !== undefined && status.leader.freshness === "unobserved");
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
