/**
 * `keelson plan`: reads an inventory and a cluster snapshot and prints what the controllers would
 * do: each Node (initialize, stay tainted and why, delete, taint; its pod CIDRs announced over
 * BGP, or refused and why) and each LoadBalancer Service (which VIP from which pool, or why
 * pending). Offline: it talks to no cluster.
 *
 * @module
 */
import { policyFromConfig } from "../controllers/node_lifecycle/node_lifecycle_controller.ts";
import { formatPlan } from "../plan/format_plan.ts";
import { planNodes } from "../plan/plan_nodes.ts";
import type { NodePlan } from "../plan/plan_nodes.ts";
import type { PodRoutePlan } from "../cloud/cluster_plan.ts";
import { offlineProvider } from "./offline_provider.ts";
import { EXIT_INVALID, EXIT_OK } from "./exit_codes.ts";
import { print, printError } from "./output.ts";
import { planJson } from "../plan/plan_json.ts";
import { toJsonText } from "../text/json_text.ts";
import { parseFlags, UsageError } from "./usage_error.ts";
import { requiredFlag } from "./read_env.ts";
import { INPUT_FLAGS } from "./input_flags.ts";
import { readInventory, readSnapshot } from "./command_inputs.ts";
import type { Snapshot } from "../snapshot/load_snapshot.ts";

const USAGE = `Usage: keelson plan --config FILE --state SNAPSHOT [--output text|json]

Prints what Keelson would do to a cluster: for each Node, whether it would be initialized (with
which providerID, labels and addresses), left tainted and why, deleted, or tainted, and, when a
[[bgp.peers]] entry has pod_cidrs = true, which of its pod CIDRs would be announced (via which
next hop) or refused and why; for each LoadBalancer Service, which address it would get, or
that it is not Keelson's (another spec.loadBalancerClass). Nothing is written anywhere.

Flags:
  -c, --config FILE      the inventory (env KEELSON_CONFIG)
  -s, --state SNAPSHOT   a saved cluster state, YAML or JSON, holding Nodes or Services:
                         kubectl get nodes,svc,endpointslices,pv -A -o yaml > state.yaml
  -o, --output FORMAT    text (default) or json
  -h, --help             print this help

Exit codes: 0 planned, 1 invalid inventory, unreadable snapshot or one with no Node and no
Service, 2 wrong command line.`;

/**
 * Runs `keelson plan`.
 * @param args the arguments after `plan`
 * @returns 0 when a plan was printed, 1 when the inventory or snapshot cannot be used
 * @throws {UsageError} on a wrong command line (exit 2)
 * @example
 * ```ts
 * const code = await planCommand(["--config", "keelson.toml", "--state", "state.yaml"]);
 * ```
 */
export async function planCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags(args, {
    ...INPUT_FLAGS,
    output: { type: "string", short: "o", default: "text" },
  });
  if (values.help) {
    print(USAGE);
    return EXIT_OK;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
  const configPath = requiredFlag(values.config, "--config FILE", "KEELSON_CONFIG");
  if (!values.state) throw new UsageError("--state SNAPSHOT is required");
  if (values.output !== "text" && values.output !== "json") {
    throw new UsageError(`--output "${values.output}" is not allowed; use text or json`);
  }
  const config = await readInventory(configPath);
  if (!config) return EXIT_INVALID;
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
  // the provider's view of the snapshot: its machines, the Services' addresses, the pod routes
  const provider = offlineProvider(config);
  if (!provider) return EXIT_INVALID;
  const plan = provider.planCluster?.({ nodes: snapshot.nodes, services: snapshot.services });
  if (!plan) {
    printError(`Provider "${provider.providerName}" cannot plan offline`);
    return EXIT_INVALID;
  }
  const nodes = await planNodes(snapshot.nodes, plan.instances, {
    policy: policyFromConfig(config),
  });
  if (plan.podRoutes) addPodRoutes(nodes, plan.podRoutes);
  const services = plan.allocations;
  if (values.output === "json") {
    print(toJsonText(planJson(nodes, services)).trimEnd());
  } else {
    print(formatPlan(nodes, services).trimEnd());
  }
  return EXIT_OK;
}

/** What a snapshot holds, as "1 Pod, 2 ConfigMaps" or "no object". */
function heldObjects(snapshot: Snapshot): string {
  const counts = new Map(snapshot.otherKinds);
  if (snapshot.persistentVolumes.length > 0) {
    counts.set("PersistentVolume", snapshot.persistentVolumes.length);
  }
  if (snapshot.endpointSlices.length > 0) {
    counts.set("EndpointSlice", snapshot.endpointSlices.length);
  }
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
