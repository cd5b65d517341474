/**
 * `keelson plan --current FILE` and `keelson plan --kubeconfig FILE`: what a proposed inventory
 * would change compared with the one in force, for the objects of a snapshot file or of a live
 * cluster. The live read goes through the read-only client (it has no write method), lists only,
 * in bounded pages, each request with a deadline and the whole read within `--timeout`. Exit
 * status as terraform's `plan -detailed-exitcode`: 0 nothing would change, 2 something would,
 * 1 an error.
 *
 * @module
 */
import { Registry } from "prom-client";
import type { Config } from "../config/types.ts";
import { KubeconfigError, resolveConnectionSettings } from "../kube/kubeconfig.ts";
import { createReadOnlyKubeClient } from "../kube/read_only_client.ts";
import { errorMessage } from "../log/error_message.ts";
import { formatDiff } from "../plan/format_diff.ts";
import { ignoredItemsNote } from "../kube/list_items.ts";
import { readLiveCluster } from "../plan/live_cluster.ts";
import { asItStands } from "../plan/as_it_stands.ts";
import { type ClusterPlan, diffPlans, hasChanges } from "../plan/plan_diff.ts";
import { planDiffJson } from "../plan/plan_json.ts";
import { formatServingChanges, planServing, servingChanges } from "../plan/plan_serving.ts";
import { formatPlanPower, planPower } from "../plan/plan_power.ts";
import { formatPlanInventories, planInventories } from "../plan/plan_inventories.ts";
import { inventoryDigest, readConfigText } from "../config/load_config.ts";
import type { Snapshot } from "../snapshot/load_snapshot.ts";
import { parseHeartbeatLease } from "../status/heartbeats.ts";
import { toJsonText } from "../text/json_text.ts";
import { readInventory, readSnapshot } from "./command_inputs.ts";
import { EXIT_INVALID, EXIT_OK } from "./exit_codes.ts";
import { print, printError } from "./output.ts";

/** Exit status when the proposed inventory changes something (terraform's 2). */
export const EXIT_CHANGES = 2;

/** `--current none`: no Keelson inventory is in force; compare with the cluster as it stands. */
export const CURRENT_NONE = "none";

/** The inventory in force when `--current` is not given: the file keelson.service runs with. */
export const DEFAULT_CURRENT_INVENTORY = "/etc/keelson/keelson.toml";

/** The deadline of each request of the live read. */
export const LIVE_REQUEST_TIMEOUT_MS = 15_000;

/** Where the objects come from. */
export type ClusterSource =
  | { kind: "snapshot"; path: string }
  | { kind: "live"; kubeconfig: string; context: string | undefined; timeoutMs: number };

/** What the caller (plan.ts) knows how to compute from the provider. */
export interface ProviderPlanning {
  /**
   * What one inventory makes of the objects.
   * @param config the inventory
   * @param snapshot the objects
   * @param deletionsBlocked a guard's reason that holds back every Node deletion, if any
   */
  plan(
    config: Config,
    snapshot: Snapshot,
    deletionsBlocked: string | undefined,
  ): Promise<ClusterPlan | undefined>;
  /** Why a running agent would refuse to reload `next` over `current`, as sentences. */
  refusals(current: Config, next: Config, snapshot: Snapshot, file: string): string[];
  /** Why Node deletions would be held back right after reloading `next` over `current`. */
  deletionsBlocked(current: Config, next: Config): string | undefined;
}

/** Inputs of `planDifference`. */
export interface PlanDifferenceInputs {
  /** The proposed inventory, read and valid. */
  proposed: Config;
  proposedPath: string;
  /** The inventory in force (`--current`). */
  currentPath: string;
  source: ClusterSource;
  json: boolean;
}

/**
 * Prints what the proposed inventory would change.
 * @param inputs the inventories, where the objects come from, the output format
 * @param planning the provider's planning functions
 * @returns 0 no change, 2 changes, 1 an input or the cluster could not be read
 */
export async function planDifference(
  inputs: PlanDifferenceInputs,
  planning: ProviderPlanning,
): Promise<number> {
  // `none`: no Keelson inventory is in force (a migration): compare with the cluster as it stands
  const standing = inputs.currentPath === CURRENT_NONE;
  if (!standing && !await exists(inputs.currentPath)) {
    printError(
      `keelson plan: ${inputs.currentPath}, the inventory in force, does not exist; name it with ` +
        `--current FILE, or --current ${CURRENT_NONE} when no Keelson runs yet`,
    );
    return EXIT_INVALID;
  }
  const current = standing ? undefined : await readInventory(inputs.currentPath);
  if (!standing && !current) return EXIT_INVALID;
  let snapshot: Snapshot | undefined;
  let cluster: string;
  if (inputs.source.kind === "snapshot") {
    snapshot = await readSnapshot(inputs.source.path);
    cluster = inputs.source.path;
  } else {
    const read = await readLive(inputs.source);
    snapshot = read?.snapshot;
    cluster = read?.cluster ?? "";
  }
  if (!snapshot) return EXIT_INVALID;
  if (snapshot.nodes.length === 0 && snapshot.services.length === 0) {
    // an empty read would pass as "nothing to change" for a cluster it never saw
    printError(`${cluster} holds no Node and no Service: nothing to compare the inventories on`);
    return EXIT_INVALID;
  }
  const proposed = await planning.plan(
    inputs.proposed,
    snapshot,
    current ? planning.deletionsBlocked(current, inputs.proposed) : undefined,
  );
  const inForce = current
    ? await planning.plan(current, snapshot, undefined)
    : proposed && asItStands(snapshot.services, proposed);
  if (!inForce || !proposed) return EXIT_INVALID; // the provider said why
  const diff = diffPlans(inForce, proposed, {
    // a reload is refused against an inventory in force; a first start has none
    refused: current
      ? planning.refusals(current, inputs.proposed, snapshot, inputs.proposedPath)
      : [],
    reportedBy: reportedVips(snapshot),
  });
  // the power the leader last reported, its Lease named by the inventory in force (by the
  // proposed one when none is in force: main's `--current none`)
  const power = planPower(snapshot.leases, (current ?? inputs.proposed).leader_election);
  // the hosts still on another file than the one in force
  const inventories = planInventories(snapshot.leases, {
    current: standing ? null : await fileDigest(inputs.currentPath),
    proposed: (await fileDigest(inputs.proposedPath)) ?? "",
  });
  // which hosts serve each pool, under each inventory, with the Nodes' readiness
  const serving = planServing(inputs.proposed, current, snapshot.nodes);
  const changes = hasChanges(diff) || servingChanges(serving);
  if (inputs.json) {
    print(
      toJsonText({
        ...planDiffJson(diff, {
          proposed: inputs.proposedPath,
          current: inputs.currentPath,
          cluster,
          read: {
            nodes: snapshot.nodes.length,
            services: snapshot.services.length,
            endpointSlices: snapshot.endpointSlices.length,
            heartbeats: heartbeatsOf(snapshot).length,
          },
          power,
          inventories,
        }),
        changes,
        servingHosts: serving,
      }).trimEnd(),
    );
  } else {
    print(
      formatDiff(diff, {
        proposed: inputs.proposedPath,
        current: inputs.currentPath,
        cluster,
        nodes: snapshot.nodes.length,
        services: snapshot.services.length,
        context: [
          ...formatPlanPower(power, {
            bmcConfigured: [current, inputs.proposed].some((c) =>
              c?.machines.some((m) => m.bmc !== undefined) ?? false
            ),
            heartbeats: heartbeatsOf(snapshot).length,
          }),
          ...formatPlanInventories(inventories, {
            current: inputs.currentPath,
            proposed: inputs.proposedPath,
          }),
        ],
        serving: {
          changed: serving.pools.filter((p) => p.changed).length,
          lines: formatServingChanges(serving),
        },
      }).trimEnd(),
    );
  }
  return changes ? EXIT_CHANGES : EXIT_OK;
}

/** Reads the live cluster; undefined after printing why it could not. */
async function readLive(
  source: Extract<ClusterSource, { kind: "live" }>,
): Promise<{ snapshot: Snapshot; cluster: string } | undefined> {
  let where = `kubeconfig "${source.kubeconfig}"`;
  try {
    const settings = await resolveConnectionSettings({
      kubeconfig: source.kubeconfig,
      ...(source.context ? { context: source.context } : {}),
    });
    where = `${settings.source} (${settings.server})`;
    const client = createReadOnlyKubeClient(settings, {
      registry: new Registry(),
      userAgent: "keelson-plan",
      requestTimeoutMs: LIVE_REQUEST_TIMEOUT_MS,
    });
    try {
      const read = await readLiveCluster(client, { signal: AbortSignal.timeout(source.timeoutMs) });
      for (const [path, count] of Object.entries(read.ignored)) {
        printError(`keelson plan: note: ${ignoredItemsNote(path, count)}`);
      }
      return { snapshot: read.snapshot, cluster: where };
    } finally {
      client.close();
    }
  } catch (error) {
    const timedOut = error instanceof DOMException && error.name === "TimeoutError";
    const message = timedOut
      ? `the cluster was not read within --timeout ${source.timeoutMs / 1000}s`
      : errorMessage(error);
    // a KubeconfigError names its file; anything else is about the server it was reaching
    printError(
      error instanceof KubeconfigError
        ? `keelson plan: ${message}`
        : `keelson plan: cannot read the cluster at ${where}: ${message}`,
    );
    return undefined;
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    // anything else (a permission, a loop) is for readInventory to explain
    return true;
  }
}

/** The digest of an inventory file already read and validated; null if it cannot be read now. */
async function fileDigest(path: string): Promise<string | null> {
  try {
    return await inventoryDigest(await readConfigText(path));
  } catch {
    return null;
  }
}

function heartbeatsOf(snapshot: Snapshot) {
  return snapshot.leases.map(parseHeartbeatLease).filter((h) => h !== undefined);
}

/** VIP -> hosts whose last heartbeat report lists it (one read: freshness is not judged). */
function reportedVips(snapshot: Snapshot): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const heartbeat of heartbeatsOf(snapshot)) {
    if ("error" in heartbeat.report) continue;
    for (const vip of heartbeat.report.vips) {
      out.set(vip.ip, [...(out.get(vip.ip) ?? []), heartbeat.host]);
    }
  }
  return out;
}
