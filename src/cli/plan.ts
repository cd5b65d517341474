/**
 * `keelson plan`: reads an inventory and a cluster snapshot and prints what the controllers would
 * do: each Node (initialize, stay tainted and why, delete, taint; its pod CIDRs announced over
 * BGP, or refused and why) and each LoadBalancer Service (which VIP from which pool, or why
 * pending), from a snapshot file. With `--current` or `--kubeconfig` (`plan_difference.ts`): what
 * a proposed inventory would change compared with the one in force, for a snapshot's objects or
 * a live cluster's (read only), with terraform's exit statuses.
 *
 * @module
 */
import { policyFromConfig } from "../controllers/node_lifecycle/node_lifecycle_controller.ts";
import { formatPlan } from "../plan/format_plan.ts";
import { planNodes } from "../plan/plan_nodes.ts";
import { removedFractionBlock } from "../controllers/node_lifecycle/deletion_guards.ts";
import type { NodePlan } from "../plan/plan_nodes.ts";
import type { Config } from "../config/types.ts";
import type { PodRoutePlan } from "../cloud/cluster_plan.ts";
import { offlineProvider } from "./offline_provider.ts";
import { EXIT_INVALID, EXIT_OK } from "./exit_codes.ts";
import { print, printError } from "./output.ts";
import { planJson } from "../plan/plan_json.ts";
import { formatServing, planServing } from "../plan/plan_serving.ts";
import { terminalSafe } from "../text/terminal_safe.ts";
import { toJsonText } from "../text/json_text.ts";
import { countHeartbeats, formatPlanPower, planPower } from "../plan/plan_power.ts";
import { parseFlags, UsageError } from "./usage_error.ts";
import { requiredFlag } from "./read_env.ts";
import { INPUT_FLAGS } from "./input_flags.ts";
import { readInventory, readSnapshot } from "./command_inputs.ts";
import type { Snapshot } from "../snapshot/load_snapshot.ts";
import type { ClusterPlan } from "../plan/plan_diff.ts";
import { parseDuration } from "../config/duration.ts";
import {
  DEFAULT_CURRENT_INVENTORY,
  planDifference,
  type ProviderPlanning,
} from "./plan_difference.ts";

const DEFAULT_TIMEOUT = "60s";

/** The help text of `keelson plan`. */
export const PLAN_USAGE =
  `Usage: keelson plan --config FILE --state SNAPSHOT [--current FILE] [--output text|json]
       keelson plan --config FILE --kubeconfig FILE [--context NAME] [--current FILE]
                    [--timeout DURATION] [--output text|json]

With --state alone: prints what Keelson would do to a saved cluster state: for each Node, whether
it would be initialized (with which providerID, labels and addresses), left tainted and why,
deleted, or tainted, and, when a [[bgp.peers]] entry has pod_cidrs = true, which of its pod CIDRs
would be announced (via which next hop) or refused and why; for each LoadBalancer Service, which
address it would get, or that it is not Keelson's (another spec.loadBalancerClass).

With --kubeconfig (a live cluster) or --current: compares the proposed inventory (--config) with
the one in force (--current) and prints only what would change: Nodes that would be initialized,
tainted or deleted (or kept by a guard, and which), pod routes, Services whose address or pool
would change or that would be stranded, and why a reload of the file would be refused. The live
read lists Nodes, Services, EndpointSlices and kube-system Leases (heartbeats), in pages, with
a read-only client; it needs only get/list on them.

Nothing is written anywhere.

Flags:
  -c, --config FILE      the inventory to plan (the proposed one) (env KEELSON_CONFIG)
  -s, --state SNAPSHOT   a saved cluster state, YAML or JSON, holding Nodes or Services:
                         kubectl get nodes,svc,endpointslices,pv -A -o yaml > state.yaml
      --kubeconfig FILE  read the objects from this cluster instead (lists only)
      --context NAME     the kubeconfig context (default: its current-context)
      --current FILE     the inventory in force (default with --kubeconfig:
                         ${DEFAULT_CURRENT_INVENTORY}, what keelson.service runs with);
                         "none" before Keelson runs (a migration): compare with the cluster as
                         it stands, each Service with the address its status shows
      --timeout DURATION the longest the live read may take (default ${DEFAULT_TIMEOUT}; each
                         request also has its own 15s deadline)
  -o, --output FORMAT    text (default) or json
  -h, --help             print this help

Exit codes with --state alone: 0 planned, 1 invalid inventory, unreadable snapshot or one with
no Node and no Service.
Exit codes with --kubeconfig or --current: 0 nothing would change, 2 something would change (or
a reload of the file would be refused), 1 an inventory, the snapshot or the cluster cannot be
read.
A wrong command line exits 1 (2 means only "changes" here, as in terraform).`;

/** The flag table of `keelson plan` (node:util parseArgs). */
export const PLAN_FLAGS = {
  ...INPUT_FLAGS,
  output: { type: "string", short: "o", default: "text" },
  kubeconfig: { type: "string" },
  context: { type: "string" },
  current: { type: "string" },
  timeout: { type: "string" },
} as const;

/**
 * Runs `keelson plan`.
 * @param args the arguments after `plan`
 * @returns with `--state` alone: 0 when a plan was printed, 1 when the inventory or snapshot
 *   cannot be used; with `--kubeconfig` or `--current`: 0 no change, 2 changes, 1 an error
 * @throws {UsageError} on a wrong command line (exit 1)
 * @example
 * ```ts
 * const code = await planCommand(["--config", "keelson.toml", "--state", "state.yaml"]);
 * ```
 */
export async function planCommand(args: string[]): Promise<number> {
  try {
    return await plan(args);
  } catch (error) {
    // 2 is "something would change" here: a wrong command line must not read as that in a CI gate
    if (error instanceof UsageError) throw new UsageError(error.message, EXIT_INVALID);
    throw error;
  }
}

async function plan(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags(args, PLAN_FLAGS);
  if (values.help) {
    print(PLAN_USAGE);
    return EXIT_OK;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
  const configPath = requiredFlag(values.config, "--config FILE", "KEELSON_CONFIG");
  if (values.state && values.kubeconfig) {
    throw new UsageError("give --state SNAPSHOT or --kubeconfig FILE, not both");
  }
  if (!values.state && !values.kubeconfig) {
    throw new UsageError("--state SNAPSHOT or --kubeconfig FILE is required");
  }
  if (!values.kubeconfig && (values.context || values.timeout)) {
    throw new UsageError(`${values.context ? "--context" : "--timeout"} needs --kubeconfig`);
  }
  if (values.output !== "text" && values.output !== "json") {
    throw new UsageError(`--output "${values.output}" is not allowed; use text or json`);
  }
  const timeout = parseDuration(values.timeout ?? DEFAULT_TIMEOUT);
  if (!timeout || timeout.ms <= 0 || timeout.ms > 600_000) {
    throw new UsageError(
      `--timeout must be a duration above 0 and at most 10m such as "60s", not "${values.timeout}"`,
    );
  }
  const config = await readInventory(configPath);
  if (!config) return EXIT_INVALID;
  if (values.kubeconfig || values.current) {
    return await planDifference({
      proposed: config,
      proposedPath: configPath,
      currentPath: values.current ?? DEFAULT_CURRENT_INVENTORY,
      source: values.kubeconfig
        ? {
          kind: "live",
          kubeconfig: values.kubeconfig,
          context: values.context,
          timeoutMs: timeout.ms,
        }
        : { kind: "snapshot", path: values.state! },
      json: values.output === "json",
    }, PLANNING);
  }
  if (!values.state) throw new UsageError("--state SNAPSHOT is required");
  const snapshot = await readSnapshot(values.state);
  if (!snapshot) return EXIT_INVALID;
  if (snapshot.nodes.length === 0 && snapshot.services.length === 0) {
    // an empty plan of an empty file would read as "nothing to do" for a real cluster
    printError(
      `${values.state} holds ${heldObjects(snapshot)} and nothing plan reads (no Node, no ` +
        "Service); give kubectl get nodes,svc,endpointslices -A -o yaml",
    );
    return EXIT_INVALID;
  }
  const planned = await planCluster(config, snapshot, undefined);
  if (!planned) return EXIT_INVALID;
  const { nodes, services } = planned;
  const power = planPower(snapshot.leases, config.leader_election);
  const serving = planServing(config, undefined, snapshot.nodes);
  if (values.output === "json") {
    print(toJsonText({ ...planJson(nodes, services), power, servingHosts: serving }).trimEnd());
  } else {
    const context = {
      bmcConfigured: config.machines.some((m) => m.bmc !== undefined),
      heartbeats: countHeartbeats(snapshot.leases),
    };
    print(
      [
        formatPlan(nodes, services).trimEnd(),
        "",
        ...formatServing(serving).map(terminalSafe),
        ...formatPlanPower(power, context),
      ].join("\n"),
    );
  }
  return EXIT_OK;
}

/**
 * What the controllers would do to a snapshot's objects under one inventory.
 * @param config the inventory
 * @param snapshot the objects
 * @param deletionsBlocked a guard's reason that holds back every Node deletion, if any
 * @returns the Node plans (pod routes included) and the allocations
 */
async function planCluster(
  config: Config,
  snapshot: Snapshot,
  deletionsBlocked: string | undefined,
): Promise<ClusterPlan | undefined> {
  // the provider's view of the snapshot: its machines, the Services' addresses, the pod routes
  const provider = offlineProvider(config);
  if (!provider) return undefined;
  const plan = provider.planCluster?.({ nodes: snapshot.nodes, services: snapshot.services });
  if (!plan) {
    printError(`Provider "${provider.providerName}" cannot plan offline`);
    return undefined;
  }
  const nodes = await planNodes(snapshot.nodes, plan.instances, {
    policy: policyFromConfig(config),
    ...(deletionsBlocked ? { deletionsBlocked } : {}),
  });
  if (plan.podRoutes) addPodRoutes(nodes, plan.podRoutes);
  return { nodes, services: plan.allocations };
}

/** The provider's answers `plan_difference.ts` needs. */
const PLANNING: ProviderPlanning = {
  plan: planCluster,
  refusals: (current, next, snapshot, file) =>
    (offlineProvider(next)?.validateReload?.(next, current, file, snapshot.services) ?? [])
      .map((i) => i.message),
  deletionsBlocked: removedFractionBlock,
};

/** What a snapshot holds, as "1 Pod, 2 ConfigMaps" or "no object". */
function heldObjects(snapshot: Snapshot): string {
  const counts = new Map(snapshot.otherKinds);
  if (snapshot.persistentVolumes.length > 0) {
    counts.set("PersistentVolume", snapshot.persistentVolumes.length);
  }
  if (snapshot.endpointSlices.length > 0) {
    counts.set("EndpointSlice", snapshot.endpointSlices.length);
  }
  if (snapshot.leases.length > 0) counts.set("Lease", snapshot.leases.length);
  if (counts.size === 0) return "no object";
  return [...counts].map(([kind, n]) => `${n} ${kind}${n === 1 ? "" : "s"}`).join(", ");
}

/**
 * Adds each Node's pod routes to its plan, as the route controller and BIRD would have them
 * (the provider plans them only when it has Routes: some peer receives pod CIDRs).
 */
function addPodRoutes(plans: NodePlan[], decision: PodRoutePlan): void {
  const byNode = new Map(plans.map((p) => [p.node, p]));
  for (const route of decision.announced) {
    byNode.get(route.node)?.actions.push({
      action: "announce-route",
      cidr: route.cidr,
      nextHop: route.nextHop,
    });
  }
  for (const route of decision.refused) {
    byNode.get(route.node)?.actions.push({
      action: "refuse-route",
      cidr: route.cidr,
      reason: route.reason,
    });
  }
}
