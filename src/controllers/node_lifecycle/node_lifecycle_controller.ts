/**
 * The node-lifecycle controller (upstream `cloud-node-lifecycle-controller`). Every monitor period
 * it looks at every Node: NotReady Nodes whose machine is gone or retired are deleted, Nodes of
 * shut-down machines get the shutdown taint (removed once Ready), and Keelson's retired and
 * maintenance taints follow the inventory. Deletion fails closed: never on a provider error,
 * never past the rate limit, never after a reload that removed too many machines, and only an
 * event in dry-run mode. Every deletion decision is an event and a `keelson_node_deletions_total`
 * sample. The rate limit counts the deletions recorded on the leader Lease
 * (`../action_ledger/`), each recorded before the DELETE, so a restart or a new leader does not
 * start a fresh window.
 *
 * @module
 */
import type { V1Node, V1Taint } from "@kubernetes/client-node";
import { Counter, type Registry } from "prom-client";
import { declareOnce } from "../../metrics/registry.ts";
import type { InstancesV2 } from "../../cloud/provider.ts";
import type { Config } from "../../config/types.ts";
import { logger } from "../../log/logging.ts";
import type { ClusterWriter, EventRecorder, Lister } from "../../kube/ports.ts";
import { delay } from "../../kube/delay.ts";
import { retryOnConflict } from "../../kube/retry_on_conflict.ts";
import { nodeRef } from "../../kube/event_targets.ts";
import { decideLifecycle, type LifecycleDecision, RETIRED_TAINT } from "./decide_lifecycle.ts";
import type { DeletionGuard } from "./deletion_guards.ts";
import { errorMessage } from "../../log/error_message.ts";
import type { ActionLedger } from "../action_ledger/action_ledger.ts";

/** Deletion outcomes (the `result` label). */
export type DeletionResult = "deleted" | "failed" | "dry_run" | "rate_limited" | "blocked";

/** Event reasons. */
export const REASON_DELETING_NODE = "DeletingNode";
/** Upstream's reason when the DELETE fails. */
export const REASON_DELETING_NODE_FAILED = "DeletingNodeFailed";
/** A deletion held back by the rate limit. */
export const REASON_DELETION_RATE_LIMITED = "DeletionRateLimited";
/** A deletion refused by a guard. */
export const REASON_DELETION_BLOCKED = "DeletionBlocked";
/** A deletion only logged (dry run). */
export const REASON_DELETION_DRY_RUN = "DeletingNodeDryRun";
/** A Ready Node whose machine is retired. */
export const REASON_MACHINE_RETIRED = "MachineRetired";

/** Deletion policy, read on every round so reloads apply. */
export interface NodeLifecyclePolicy {
  dryRun: boolean;
  maxDeletionsPerInterval: number;
  deletionIntervalMs: number;
}

/**
 * The policy in a configuration's `[node_lifecycle]` table.
 * @param config the configuration
 * @returns the policy
 */
export function policyFromConfig(config: Config): NodeLifecyclePolicy {
  return {
    dryRun: config.node_lifecycle.dry_run,
    maxDeletionsPerInterval: config.node_lifecycle.max_deletions_per_interval,
    deletionIntervalMs: config.node_lifecycle.deletion_interval.ms,
  };
}

/** What the controller reads and writes. */
export interface NodeLifecycleDeps {
  nodes: Lister<V1Node>;
  writer: ClusterWriter;
  events: EventRecorder;
  instances: InstancesV2;
  registry: Registry;
  /** Blocks deletions (e.g. after a reload that removed too many machines). @default allow */
  guard?: DeletionGuard;
  /** The record of recent deletions the rate limit counts (this term's, on the leader Lease). */
  ledger: ActionLedger;
}

/** Tuning. */
export interface NodeLifecycleOptions {
  /** `node_monitor_period`. @default 5000 */
  monitorPeriodMs?: number;
  /** The deletion policy. @default 1 per minute, not dry run */
  policy?: () => NodeLifecyclePolicy;
  /** Milliseconds since the epoch. @default Date.now */
  now?: () => number;
}

/** The node-lifecycle controller. */
export class NodeLifecycleController {
  #deps: NodeLifecycleDeps;
  #periodMs: number;
  #policy: () => NodeLifecyclePolicy;
  #now: () => number;
  #deletions: Counter<"result">;
  #log = logger("controllers", "cloud-node-lifecycle");

  /**
   * @param deps lister, writer, events, provider instances, registry, guard
   * @param options period, policy, clock
   */
  constructor(deps: NodeLifecycleDeps, options: NodeLifecycleOptions = {}) {
    this.#deps = deps;
    this.#periodMs = options.monitorPeriodMs ?? 5000;
    this.#policy = options.policy ??
      (() => ({ dryRun: false, maxDeletionsPerInterval: 1, deletionIntervalMs: 60_000 }));
    this.#now = options.now ?? Date.now;
    this.#deletions = declareOnce(deps.registry, "keelson_node_deletions_total", () =>
      new Counter({
        name: "keelson_node_deletions_total",
        help: "Node deletion decisions of the node-lifecycle controller, by result.",
        labelNames: ["result"],
        registers: [deps.registry],
      }));
  }

  /**
   * Runs `monitorNodes` every period until `signal` aborts.
   * @param signal stops the loop
   * @returns when stopped
   */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.monitorNodes();
      await this.#tidyLedger();
      await delay(this.#periodMs, signal);
    }
  }

  /**
   * One round over every Node in the lister.
   * @returns when every Node has been handled
   */
  async monitorNodes(): Promise<void> {
    for (const node of this.#deps.nodes.list()) {
      const name = node.metadata?.name ?? "";
      try {
        await this.#handle(node, await decideLifecycle(node, this.#deps.instances));
      } catch (error) {
        this.#log.warn("Cannot handle node {node}: {error}", { node: name, error });
      }
    }
  }

  async #handle(node: V1Node, decision: LifecycleDecision): Promise<void> {
    const name = node.metadata?.name ?? "";
    if (decision.error) {
      this.#log.warn("Skipping node {node}: the provider cannot tell its state: {error}", {
        node: name,
        error: decision.error,
      });
    }
    if (decision.addTaints.length > 0 || decision.removeTaints.length > 0) {
      await this.#updateTaints(name, decision.addTaints, decision.removeTaints);
      if (decision.addTaints.some((t) => t.key === RETIRED_TAINT)) {
        this.#deps.events.event(
          nodeRef(node),
          "Warning",
          REASON_MACHINE_RETIRED,
          `Tainted node ${RETIRED_TAINT}:NoSchedule instead of deleting it: its machine is retired in the inventory but the node is Ready`,
        );
      }
    }
    if (decision.blocked) {
      this.#record(node, "blocked", `Not deleting node ${name}: ${decision.blocked}`);
    }
    if (decision.delete) await this.#delete(node, decision.delete);
  }

  async #delete(node: V1Node, why: string): Promise<void> {
    const name = node.metadata?.name ?? "";
    const guard = this.#deps.guard?.deletionsAllowed() ?? { ok: true };
    if (!guard.ok) {
      this.#record(
        node,
        "blocked",
        `Not deleting node ${name} (${why}): ${guard.reason ?? "deletions are blocked"}`,
      );
      return;
    }
    const policy = this.#policy();
    let claimed: boolean;
    try {
      // recorded before the DELETE: a crash between the two costs a slot, never adds one
      claimed = (await this.#deps.ledger.claim(
        "delete",
        name,
        this.#now(),
        policy.maxDeletionsPerInterval,
        policy.deletionIntervalMs,
      )).claimed;
    } catch (error) {
      this.#record(
        node,
        "blocked",
        `Not deleting node ${name} (${why}): the deletion cannot be recorded for its rate ` +
          `limit: ${errorMessage(error)}`,
      );
      return;
    }
    if (!claimed) {
      this.#record(
        node,
        "rate_limited",
        `Not deleting node ${name} yet (${why}): at most ${policy.maxDeletionsPerInterval} deletions per ${
          policy.deletionIntervalMs / 1000
        }s`,
      );
      return;
    }
    if (policy.dryRun) {
      this.#record(node, "dry_run", `Would delete node ${name} because ${why} (dry run)`);
      return;
    }
    this.#deps.events.event(
      nodeRef(node),
      "Normal",
      REASON_DELETING_NODE,
      `Deleting node ${name} because ${why}`,
    );
    try {
      await this.#deps.writer.deleteNode(name);
      this.#deletions.inc({ result: "deleted" });
      this.#log.info("Deleted node {node} because {why}", { node: name, why });
    } catch (error) {
      this.#deletions.inc({ result: "failed" });
      this.#deps.events.event(
        nodeRef(node),
        "Warning",
        REASON_DELETING_NODE_FAILED,
        `Cannot delete node ${name}: ${errorMessage(error)}`,
      );
    }
  }

  /** Drops expired deletions from the stored record, so the next term need not count them. */
  async #tidyLedger(): Promise<void> {
    try {
      await this.#deps.ledger.tidy("delete", this.#policy().deletionIntervalMs);
    } catch (error) {
      this.#log.debug("Cannot tidy the action record: {error}", { error: errorMessage(error) });
    }
  }

  #record(
    node: V1Node,
    result: Exclude<DeletionResult, "deleted" | "failed">,
    message: string,
  ): void {
    this.#deletions.inc({ result });
    const reason = {
      blocked: REASON_DELETION_BLOCKED,
      rate_limited: REASON_DELETION_RATE_LIMITED,
      dry_run: REASON_DELETION_DRY_RUN,
    }[result];
    this.#deps.events.event(
      nodeRef(node),
      result === "dry_run" ? "Normal" : "Warning",
      reason,
      message,
    );
    this.#log.info(message);
  }

  /** Adds and removes taints with a patch carrying the resourceVersion; 5 tries on conflict. */
  async #updateTaints(name: string, add: V1Taint[], remove: string[]): Promise<void> {
    await retryOnConflict({ steps: 5, delayMs: 100 }, async () => {
      const node = this.#deps.nodes.get(name);
      if (!node) return;
      const current = node.spec?.taints ?? [];
      const keys = new Set(current.map((t) => t.key));
      const taints = [
        ...current.filter((t) => !remove.includes(t.key)),
        ...add.filter((t) => !keys.has(t.key)),
      ];
      await this.#deps.writer.patchNode(
        name,
        { metadata: { resourceVersion: node.metadata?.resourceVersion }, spec: { taints } },
        "merge",
      );
    });
  }
}
