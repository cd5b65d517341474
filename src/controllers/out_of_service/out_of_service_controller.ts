/**
 * The out-of-service controller (Keelson; upstream leaves this to a person): automates
 * Kubernetes' non-graceful node shutdown. A NotReady Node whose machine the power controller has
 * reported `off` without a break for `confirm_off_for` gets
 * `node.kubernetes.io/out-of-service=nodeshutdown:NoExecute` and Keelson's marker annotation, so
 * kube-controller-manager force-deletes its pods and detaches their volumes; Keelson removes only
 * a taint it marked, once the Node is Ready again. A Node still Ready whose machine is confirmed
 * off and whose kubelet's Lease has gone silent (`decide_power_loss.ts`, the kubelet Leases seen
 * through `kubelet_lease_observer.ts`) is first marked NotReady, as kube-controller-manager would
 * after its grace period, so the taint and the pod garbage collector need not wait for it.
 * Once the Node is tainted by Keelson and not Ready, its terminating Pods are force-deleted at once
 * (`decide_pod_gc.ts`: kube-controller-manager's pod garbage collector's rule, which it runs only
 * every 20 s), listed through the bounded reader with no Pod cache.
 * Optional fencing forces a machine off whose
 * Node has been NotReady for `fence_after` while its power still says `on`. Every action is
 * guarded (held while a config reload is rejected, never the last control-plane hosts, a cap per
 * interval, never this host for fencing) and every decision is an Event. The caps count the
 * actions recorded on the leader Lease (`../action_ledger/`), each recorded before it is taken,
 * so a restart or a new leader does not start a fresh window.
 *
 * A Node is looked at when it changes, when the power controller tells of a change of its
 * machine's power (`PowerControl.onChange`), when its kubelet Lease appears, goes or is first
 * seen renewing, and when a period its decision waits for ends (a requeue at that moment); a
 * slow resync (`resyncMs`) adds every Node as a safety net for what nothing tells (a reload, a
 * guard that lifts). A sync reads only the cache and the power controller's last observation,
 * and is safe to run again.
 *
 * @module
 */
import type { V1Lease, V1Node } from "@kubernetes/client-node";
import type { Registry } from "prom-client";
import type { PowerControl, PowerObservation } from "../../cloud/provider.ts";
import type { Config } from "../../config/types.ts";
import { errorMessage } from "../../log/error_message.ts";
import { logger } from "../../log/logging.ts";
import {
  type ClusterWriter,
  type EventRecorder,
  type Informer,
  isConflict,
  isNotFound,
  objectKey,
} from "../../kube/ports.ts";
import type { NodePod, NodePods } from "../../kube/node_pods.ts";
import { delay } from "../../kube/delay.ts";
import { type Clock, systemClock } from "../../kube/clock.ts";
import { retryOnConflict } from "../../kube/retry_on_conflict.ts";
import { defaultControllerRateLimiter } from "../../kube/queue_rate_limiters.ts";
import { runWorkers, WorkQueue } from "../../kube/work_queue.ts";
import { nodeRef } from "../../kube/event_targets.ts";
import { done, requeueAfter, type SyncResult } from "../../kube/sync_result.ts";
import type { DeletionGuard } from "../node_lifecycle/deletion_guards.ts";
import { readyStatus } from "../node_lifecycle/decide_lifecycle.ts";
import type { ActionLedger } from "../action_ledger/action_ledger.ts";
import { KubeletLeaseObserver } from "./kubelet_lease_observer.ts";
import {
  afterReadiness,
  type FailureKind,
  type NodeMemory,
  noteFailure,
  NOTHING_REMEMBERED,
  remembersNothing,
  type ReportKind,
  reportOnce,
  sweepOver,
} from "./node_memory.ts";
import {
  decideOutOfService,
  type GuardContext,
  hasOutOfServiceTaint,
  isControlPlaneNode,
  OUT_OF_SERVICE_MARKER,
  OUT_OF_SERVICE_TAINT,
  type OutOfServiceAction,
  type OutOfServicePolicy,
} from "./decide_out_of_service.ts";
import { type OutOfServiceMetrics, outOfServiceMetrics } from "./metrics.ts";
import {
  decidePodGc,
  POD_SWEEP_INTERVAL_MS,
  POD_SWEEP_WINDOW_MS,
  podGcBlockedBy,
} from "./decide_pod_gc.ts";

/** The queue name (and the workqueue metrics' `name` label). */
export const OUT_OF_SERVICE_QUEUE_NAME = "OutOfService";
/** The Events' source component. */
export const OUT_OF_SERVICE_EVENT_COMPONENT = "out-of-service-controller";

/** Event reasons. */
export const REASON_TAINTED = "OutOfServiceTainted";
/** Keelson marked a Ready Node NotReady: its machine is off and its kubelet's Lease silent. */
export const REASON_POWER_LOSS = "NodePowerLoss";
/** The reason of the Ready condition Keelson writes then (kube-controller-manager's own). */
export const NOT_READY_CONDITION_REASON = "NodeStatusUnknown";
/** Keelson removed the taint it added. */
export const REASON_TAINT_REMOVED = "OutOfServiceTaintRemoved";
/** Keelson force-deleted a terminating Pod of a Node it took out of service (on the Pod). */
export const REASON_POD_DELETED = "OutOfServicePodDeleted";
/** The same, once per sweep on the Node, naming the Pods. */
export const REASON_PODS_DELETED = "OutOfServicePodsDeleted";
/** A guard held the taint back. */
export const REASON_TAINT_BLOCKED = "OutOfServiceBlocked";
/** The rate limit held the taint back. */
export const REASON_TAINT_RATE_LIMITED = "OutOfServiceRateLimited";
/** The power says off while the Node is Ready. */
export const REASON_POWER_MISMATCH = "PowerStateMismatch";
/** Before a ForceOff. */
export const REASON_FENCING = "FencingNode";
/** After a successful ForceOff. */
export const REASON_FENCED = "FencedNode";
/** A ForceOff that failed. */
export const REASON_FENCING_FAILED = "FencingFailed";
/** A ForceOff only reported. */
export const REASON_FENCING_DRY_RUN = "FencingDryRun";
/** A guard held a ForceOff back. */
export const REASON_FENCING_BLOCKED = "FencingBlocked";
/** The rate limit held a ForceOff back. */
export const REASON_FENCING_RATE_LIMITED = "FencingRateLimited";

/** The policy with its rate limit, read on every sync so reloads apply. */
export interface PowerActionPolicy extends OutOfServicePolicy {
  /** Taints added (and, separately, machines forced off) per interval; 0: none. */
  maxActionsPerInterval: number;
  actionIntervalMs: number;
}

/**
 * The policy in a configuration's `[power]` table.
 * @param config the configuration
 * @returns the policy
 */
export function powerPolicyFromConfig(config: Config): PowerActionPolicy {
  const power = config.power;
  return {
    enabled: power.out_of_service,
    confirmOffMs: power.confirm_off_for.ms,
    fencing: power.fencing,
    fenceAfterMs: power.fence_after.ms,
    leaseSilenceMs: power.kubelet_lease_silence.ms,
    maxActionsPerInterval: power.max_actions_per_interval,
    actionIntervalMs: power.action_interval.ms,
  };
}

/** What the controller reads and writes. */
export interface OutOfServiceDeps {
  nodes: Informer<V1Node>;
  writer: ClusterWriter;
  events: EventRecorder;
  power: PowerControl;
  registry: Registry;
  /** Holds every action while it says no (a rejected config reload). @default allow */
  guard?: DeletionGuard;
  /** The Node name of the host this process runs on: never fenced. */
  host?: string;
  /** The record of recent actions the caps count (this term's, on the leader Lease). */
  ledger: ActionLedger;
  /**
   * The kubelets' node Leases (`kube-node-lease`), run for the term by the caller: the second
   * witness of a power loss. Absent: a Ready Node waits for kube-controller-manager's verdict.
   */
  kubeletLeases?: Informer<V1Lease>;
  /**
   * The Pods of a Node, listed when a Node Keelson tainted is not Ready (no Pod cache), and their
   * force deletion. Absent: kube-controller-manager's pod garbage collector alone deletes them.
   */
  pods?: NodePods;
}

/** How long after a failed read of the action record the next sync tries again. */
const LEDGER_RETRY_MS = 1_000;
/** How soon a Node whose action a guard or the rate limit held is looked at again. */
const HELD_RECHECK_MS = 5_000;
/** How long one list of a Node's Pods may take before it is given up (and tried again). */
const POD_LIST_TIMEOUT_MS = 5_000;
/** The safety-net resync's default period. */
export const OUT_OF_SERVICE_RESYNC_MS = 30_000;

/** Tuning. */
export interface OutOfServiceOptions {
  /** The policy (`[power]`). */
  policy: () => PowerActionPolicy;
  /** How often every Node is looked at again, whatever was told. @default 30 s */
  resyncMs?: number;
  /** The resync's timer, and the default of `now` and of the queue's clock. @default system */
  clock?: Clock;
  /** Milliseconds since the epoch. @default the clock's */
  now?: () => number;
  /** The monotonic clock the kubelet Leases' changes are timed by (ms). @default performance.now */
  monotonicNow?: () => number;
  /** The work queue (tests inject one). @default an "OutOfService" queue */
  queue?: WorkQueue;
}

/** The out-of-service controller. */
export class OutOfServiceController {
  #deps: OutOfServiceDeps;
  #policy: () => PowerActionPolicy;
  #resyncMs: number;
  #clock: Clock;
  #now: () => number;
  #queue: WorkQueue;
  #metrics: OutOfServiceMetrics;
  /** Why the action record could not be read, and when (this clock) to try again. */
  #ledgerProblem: { reason: string; retryAtMs: number } | undefined;
  #leases: KubeletLeaseObserver | undefined;
  /** What this process remembers of each Node, one record per Node (`node_memory.ts`). */
  #memory = new Map<string, NodeMemory>();
  #log = logger("controllers", "out-of-service");

  /**
   * @param deps informer, writer, events, power control, registry, guard, this host
   * @param options policy, resync period, clock, queue
   */
  constructor(deps: OutOfServiceDeps, options: OutOfServiceOptions) {
    this.#deps = deps;
    this.#policy = options.policy;
    this.#resyncMs = options.resyncMs ?? OUT_OF_SERVICE_RESYNC_MS;
    const clock = this.#clock = options.clock ?? systemClock();
    this.#now = options.now ?? (() => clock.now());
    this.#queue = options.queue ??
      new WorkQueue({
        name: OUT_OF_SERVICE_QUEUE_NAME,
        rateLimiter: defaultControllerRateLimiter({ clock }),
        registry: deps.registry,
        clock,
      });
    this.#metrics = outOfServiceMetrics(deps.registry);
    // a new observer per controller, so per term: a new leader first watches the renewals
    this.#leases = deps.kubeletLeases
      ? new KubeletLeaseObserver(deps.kubeletLeases, options.monotonicNow)
      : undefined;
  }

  /**
   * Runs until `signal` aborts: waits for the cache, then one worker and the slow resync.
   * @param signal stops the controller
   * @returns when stopped
   */
  async run(signal: AbortSignal): Promise<void> {
    const unsubscribe = this.#deps.nodes.subscribe((event) => {
      const key = objectKey(event.object);
      if (event.type === "delete") this.#forget(key);
      else this.#queue.add(key);
    });
    const unsubscribePower = this.#deps.power.onChange((change) => {
      // a change is rare (a machine's power, its BMC answering or not): the cache is scanned
      for (const node of this.#deps.nodes.list()) {
        if (change.concerns(node)) this.#queue.add(objectKey(node));
      }
    });
    const stopObserving = this.#leases?.start((name) => {
      if (this.#deps.nodes.get(name)) this.#queue.add(name);
    });
    try {
      if (!(await this.#deps.nodes.waitForSync(signal))) return;
      await Promise.all([
        runWorkers(this.#queue, 1, (key) => this.sync(key), signal),
        this.#resync(signal),
      ]);
    } finally {
      unsubscribe();
      unsubscribePower();
      stopObserving?.();
      this.#queue.shutDown();
    }
  }

  async #resync(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      for (const node of this.#deps.nodes.list()) this.#queue.add(objectKey(node));
      await this.#tidyLedger();
      await delay(this.#resyncMs, signal, this.#clock);
    }
  }

  /**
   * Looks at one Node and carries out the decision.
   * @param key the Node name
   * @returns `done`, or `requeue` when a confirmation or fencing period is still running
   * @throws when a write fails (the worker retries with backoff)
   */
  async sync(key: string): Promise<SyncResult> {
    const node = this.#deps.nodes.get(key);
    if (!node) {
      this.#forget(key);
      return done();
    }
    const now = this.#now();
    const policy = this.#policy();
    const ready = readyStatus(node);
    const memory = this.#remember(key, afterReadiness(this.#recall(key), ready === "True", now));
    const power = await this.#powerOf(node);
    await this.#openLedger(now);
    const decision = decideOutOfService({
      node,
      power,
      nowMs: now,
      policy,
      notReadySinceMs: memory.notReadySinceMs,
      lastFenceMs: memory.lastFenceMs,
      withdrawnInEpisodeMs: memory.withdrawnInEpisodeMs,
      ...(this.#leases ? { kubeletLease: this.#leases.view(key) } : {}),
      guards: this.#guards(node, now, policy),
    });
    for (const action of decision.actions) {
      await this.#carryOut(node, action, power, now);
    }
    const sweep = await this.#sweepPods(node, now, policy);
    // a little after the period ends, so the next look does not land just short of it
    let recheck = decision.recheckAfterMs === undefined
      ? undefined
      : Math.max(0, decision.recheckAfterMs) + 50;
    // a held action waits for what nothing tells of: the record read, a slot, a guard lifted
    if (decision.actions.some((a) => a.kind === "taint-held" || a.kind === "fence-held")) {
      const held = this.#deps.ledger.isOpen() ? HELD_RECHECK_MS : LEDGER_RETRY_MS;
      recheck = Math.min(recheck ?? Infinity, held);
    }
    if (sweep !== undefined) recheck = Math.min(recheck ?? Infinity, sweep);
    return recheck === undefined ? done() : requeueAfter(recheck);
  }

  /**
   * Force-deletes the terminating Pods of a Node Keelson took out of service, as the pod garbage
   * collector would at its next pass (`decide_pod_gc.ts`).
   * @returns how soon to list the Node's Pods again; undefined when its sweep is over
   */
  async #sweepPods(
    node: V1Node,
    now: number,
    policy: PowerActionPolicy,
  ): Promise<number | undefined> {
    const pods = this.#deps.pods;
    if (!pods) return undefined;
    const name = node.metadata?.name ?? "";
    const allowed = this.#deps.guard?.deletionsAllowed() ?? { ok: true };
    const podPolicy = {
      enabled: policy.enabled,
      held: allowed.ok ? undefined : `power actions are held: ${allowed.reason ?? "the guard"}`,
    };
    if (podGcBlockedBy(node, podPolicy) !== undefined) {
      // a new episode starts a new sweep
      this.#remember(name, sweepOver(this.#recall(name)));
      return undefined;
    }
    let startedMs = this.#recall(name).podSweepStartedMs;
    if (startedMs === undefined) {
      this.#remember(name, { ...this.#recall(name), podSweepStartedMs: startedMs = now });
    }
    if (now - startedMs >= POD_SWEEP_WINDOW_MS) return undefined;
    let listed: NodePod[];
    try {
      // one slow answer must not hold the queue's one worker (other Nodes) for the request's
      // whole deadline: the next second tries again
      listed = await pods.list(name, AbortSignal.timeout(POD_LIST_TIMEOUT_MS));
      this.#noteFailure(name, "podListError", undefined);
    } catch (error) {
      const message = errorMessage(error);
      if (this.#noteFailure(name, "podListError", message)) {
        this.#log.warn(
          "Cannot list the pods of node {node}, which Keelson took out of service: {error}; " +
            "kube-controller-manager's pod garbage collector deletes them at its next pass",
          { node: name, error: message },
        );
      }
      // tried again within the window, like a Pod not yet terminating
      return POD_SWEEP_INTERVAL_MS;
    }
    const decision = decidePodGc({
      node,
      pods: listed,
      policy: podPolicy,
      sweepStartedMs: startedMs,
      nowMs: now,
    });
    const deleted: string[] = [];
    for (const pod of decision.deletions) {
      if (await this.#forceDelete(node, pod)) deleted.push(`${pod.namespace}/${pod.name}`);
    }
    if (deleted.length > 0) {
      const shown = deleted.length > 10
        ? `${deleted.slice(0, 10).join(", ")} and ${deleted.length - 10} more`
        : deleted.join(", ");
      this.#deps.events.event(
        nodeRef(node),
        "Normal",
        REASON_PODS_DELETED,
        `Force-deleted ${deleted.length} terminating pod${deleted.length === 1 ? "" : "s"} of ` +
          `node ${name} (${shown}): ${podGcWhy(name)}`,
      );
    }
    return decision.recheckAfterMs;
  }

  /** One force deletion (uid precondition); true when this call deleted the Pod. */
  async #forceDelete(node: V1Node, pod: NodePod): Promise<boolean> {
    const name = node.metadata?.name ?? "";
    const what = `${pod.namespace}/${pod.name}`;
    try {
      await this.#deps.pods!.forceDelete(pod);
    } catch (error) {
      if (isNotFound(error) || isConflict(error)) {
        // gone meanwhile (kube-controller-manager's pass), or a new Pod under the same name
        this.#metrics.podDeletions.inc({ result: "gone" });
        this.#log.debug("Pod {pod} on node {node} was already gone or replaced: {error}", {
          pod: what,
          node: name,
          error: errorMessage(error),
        });
        return false;
      }
      this.#metrics.podDeletions.inc({ result: "failed" });
      this.#log.warn("Cannot force-delete terminating pod {pod} on node {node}: {error}", {
        pod: what,
        node: name,
        error: errorMessage(error),
      });
      return false;
    }
    this.#metrics.podDeletions.inc({ result: "deleted" });
    const message = `Force-deleted terminating pod ${what} (deletion requested at ` +
      `${pod.deletionTimestamp}) on node ${name}: ${podGcWhy(name)}`;
    this.#deps.events.event(
      {
        kind: "Pod",
        apiVersion: "v1",
        metadata: { name: pod.name, namespace: pod.namespace, uid: pod.uid },
      },
      "Normal",
      REASON_POD_DELETED,
      message,
    );
    this.#log.info(message);
    return true;
  }

  async #powerOf(node: V1Node): Promise<PowerObservation | null> {
    const name = node.metadata?.name ?? "";
    try {
      const power = await this.#deps.power.powerState(node);
      this.#noteFailure(name, "powerError", undefined);
      return power;
    } catch (error) {
      // no answer is not "off": nothing is added while the power cannot be told; said once per
      // cause, not on every resync
      const message = errorMessage(error);
      if (this.#noteFailure(name, "powerError", message)) {
        this.#log.warn("Cannot read the power state of node {node}: {error}", {
          node: name,
          error: message,
        });
      }
      return null;
    }
  }

  /** Reads the action record if this term has not yet (at most once a second after a failure). */
  async #openLedger(now: number): Promise<void> {
    const ledger = this.#deps.ledger;
    if (ledger.isOpen() || (this.#ledgerProblem && now < this.#ledgerProblem.retryAtMs)) return;
    try {
      await ledger.open();
      this.#ledgerProblem = undefined;
    } catch (error) {
      const reason = errorMessage(error);
      if (this.#ledgerProblem?.reason !== reason) {
        this.#log.warn("Power actions are held: {reason}", { reason });
      }
      this.#ledgerProblem = { reason, retryAtMs: now + LEDGER_RETRY_MS };
    }
  }

  /** Drops expired actions from the stored record, so the next term need not count them. */
  async #tidyLedger(): Promise<void> {
    const interval = this.#policy().actionIntervalMs;
    try {
      await this.#deps.ledger.tidy("taint", interval);
      await this.#deps.ledger.tidy("fence", interval);
    } catch (error) {
      this.#log.debug("Cannot tidy the action record: {error}", { error: errorMessage(error) });
    }
  }

  /** Records a taint or a ForceOff on the leader Lease before it is taken; false: do not. */
  async #claim(kind: "taint" | "fence", name: string, now: number): Promise<boolean> {
    const policy = this.#policy();
    const claim = await this.#deps.ledger.claim(
      kind,
      name,
      now,
      policy.maxActionsPerInterval,
      policy.actionIntervalMs,
    );
    return claim.claimed;
  }

  #guards(node: V1Node, now: number, policy: PowerActionPolicy): GuardContext {
    const name = node.metadata?.name ?? "";
    const allowed = this.#deps.guard?.deletionsAllowed() ?? { ok: true };
    const ledger = this.#deps.ledger;
    const unrecorded = ledger.isOpen() ? undefined : this.#ledgerProblem?.reason ??
      "the record of recent actions on the leader Lease has not been read yet";
    const controlPlane = isControlPlaneNode(node);
    // only a control-plane Node needs the others counted (few), not every Node every second
    const otherControlPlaneInService = controlPlane
      ? this.#deps.nodes.list().filter((other) =>
        other.metadata?.name !== name && isControlPlaneNode(other) &&
        readyStatus(other) === "True" && !hasOutOfServiceTaint(other)
      ).length
      : 0;
    const max = policy.maxActionsPerInterval, interval = policy.actionIntervalMs;
    return {
      ...(allowed.ok ? {} : {
        held: `power actions are held as Node deletions are: ${
          allowed.reason ?? "the guard says no"
        }`,
      }),
      ...(!allowed.ok || unrecorded === undefined ? {} : {
        held: `power actions are held until their rate limit can be counted: ${unrecorded}`,
      }),
      controlPlane,
      otherControlPlaneInService,
      self: this.#deps.host !== undefined && this.#deps.host === name,
      taintSlotFree: ledger.slot("taint", now, max, interval).free,
      fenceSlotFree: ledger.slot("fence", now, max, interval).free,
    };
  }

  async #carryOut(
    node: V1Node,
    action: OutOfServiceAction,
    power: PowerObservation | null,
    now: number,
  ): Promise<void> {
    const name = node.metadata?.name ?? "";
    const ref = nodeRef(node);
    const episode = `${power?.state ?? "none"}@${power?.sinceMs ?? 0}`;
    const notReadyEpisode = `${this.#recall(name).notReadySinceMs ?? 0}`;
    switch (action.kind) {
      case "forget-marker": {
        const written = await this.#patch(name, (current) => {
          if (current.metadata?.annotations?.[OUT_OF_SERVICE_MARKER] === undefined) return null;
          if (hasOutOfServiceTaint(current)) return null;
          return { metadata: { annotations: { [OUT_OF_SERVICE_MARKER]: null } } };
        });
        if (power?.state === "off") {
          this.#remember(name, { ...this.#recall(name), withdrawnInEpisodeMs: power.sinceMs });
        }
        if (!written) return;
        this.#log.info(
          "Node {node}: its out-of-service taint was removed by someone else; dropped Keelson's " +
            "marker, and the taint is not added again until the power changes",
          { node: name },
        );
        return;
      }
      case "taint": {
        if (!(await this.#claim("taint", name, now))) {
          // the record held an action this term's view had not counted yet
          return await this.#carryOut(
            node,
            {
              kind: "taint-held",
              reason: "rate_limited",
              message: `Not adding the out-of-service taint to node ${name} yet: ` +
                "max_actions_per_interval reached (counted on the leader Lease)",
            },
            power,
            now,
          );
        }
        const at = new Date(now).toISOString();
        const written = await this.#patch(name, (current) => {
          if (hasOutOfServiceTaint(current)) return null;
          return {
            metadata: { annotations: { [OUT_OF_SERVICE_MARKER]: at } },
            spec: {
              taints: [...(current.spec?.taints ?? []), { ...OUT_OF_SERVICE_TAINT, timeAdded: at }],
            },
          };
        });
        if (!written) return;
        this.#metrics.applied.inc();
        this.#deps.events.event(ref, "Normal", REASON_TAINTED, action.message);
        this.#log.info(action.message);
        return;
      }
      case "mark-not-ready": {
        const at = new Date(now).toISOString();
        const written = await this.#patch(name, (current) => {
          // kube-controller-manager or the kubelet changed it meanwhile: the next look decides
          if (readyStatus(current) !== "True" || hasOutOfServiceTaint(current)) return null;
          return {
            status: {
              conditions: [{
                type: "Ready",
                status: "Unknown",
                reason: NOT_READY_CONDITION_REASON,
                message: "Keelson: the machine is powered off and the kubelet stopped renewing " +
                  "its Lease.",
                lastTransitionTime: at,
              }],
            },
          };
        }, "status");
        if (!written) return;
        this.#deps.events.event(ref, "Warning", REASON_POWER_LOSS, action.message);
        this.#log.warn(action.message);
        return;
      }
      case "untaint": {
        const written = await this.#patch(name, (current) => {
          if (current.metadata?.annotations?.[OUT_OF_SERVICE_MARKER] === undefined) return null;
          // gone meanwhile: the next look drops the marker alone, with no removal to report
          if (!hasOutOfServiceTaint(current)) return null;
          return {
            metadata: { annotations: { [OUT_OF_SERVICE_MARKER]: null } },
            spec: {
              taints: (current.spec?.taints ?? []).filter((t) =>
                !(t.key === OUT_OF_SERVICE_TAINT.key && t.effect === OUT_OF_SERVICE_TAINT.effect)
              ),
            },
          };
        });
        if (!written) return;
        this.#metrics.removed.inc();
        this.#deps.events.event(ref, "Normal", REASON_TAINT_REMOVED, action.message);
        this.#log.info(action.message);
        return;
      }
      case "taint-held":
        if (!this.#reportOnce(name, `taint-${action.reason}`, episode)) return;
        this.#metrics.held.inc({ reason: action.reason });
        this.#deps.events.event(
          ref,
          "Warning",
          action.reason === "blocked" ? REASON_TAINT_BLOCKED : REASON_TAINT_RATE_LIMITED,
          action.message,
        );
        this.#log.warn(action.message);
        return;
      case "mismatch":
        if (!this.#reportOnce(name, "mismatch", episode)) return;
        this.#deps.events.event(ref, "Warning", REASON_POWER_MISMATCH, action.message);
        this.#log.warn(action.message);
        return;
      case "fence-held":
        if (!this.#reportOnce(name, `fence-${action.reason}`, notReadyEpisode)) return;
        this.#metrics.fencing.inc({ result: action.reason });
        this.#deps.events.event(
          ref,
          "Warning",
          action.reason === "blocked" ? REASON_FENCING_BLOCKED : REASON_FENCING_RATE_LIMITED,
          action.message,
        );
        this.#log.warn(action.message);
        return;
      case "fence":
        if (!action.dryRun && !(await this.#claim("fence", name, now))) {
          return await this.#carryOut(
            node,
            {
              kind: "fence-held",
              reason: "rate_limited",
              message: `Not forcing node ${name}'s machine off yet: max_actions_per_interval ` +
                "reached (counted on the leader Lease)",
            },
            power,
            now,
          );
        }
        this.#remember(name, { ...this.#recall(name), lastFenceMs: now });
        if (action.dryRun) {
          this.#metrics.fencing.inc({ result: "dry_run" });
          this.#deps.events.event(ref, "Normal", REASON_FENCING_DRY_RUN, action.message);
          this.#log.info(action.message);
          return;
        }
        await this.#fence(node, action.message);
    }
  }

  async #fence(node: V1Node, message: string): Promise<void> {
    const name = node.metadata?.name ?? "";
    const ref = nodeRef(node);
    this.#deps.events.event(ref, "Normal", REASON_FENCING, message);
    this.#log.warn(message);
    try {
      await this.#deps.power.forceOff(node);
    } catch (error) {
      const text = `ForceOff of node ${name}'s machine failed: ${errorMessage(error)}`;
      this.#metrics.fencing.inc({ result: "failed" });
      this.#deps.events.event(ref, "Warning", REASON_FENCING_FAILED, text);
      this.#log.warn(text);
      return;
    }
    const text = `Forced node ${name}'s machine off (ForceOff accepted); the out-of-service ` +
      `taint follows once the power controller has reported it off for the confirmation period`;
    this.#metrics.fencing.inc({ result: "powered_off" });
    this.#deps.events.event(ref, "Normal", REASON_FENCED, text);
    this.#log.warn(text);
  }

  /**
   * A merge patch built from the cached Node, sent with its resourceVersion (a concurrent change
   * is a conflict, retried from a fresh read); `build` returns null when nothing is left to do.
   * @returns whether a patch was written
   */
  async #patch(
    name: string,
    build: (current: V1Node) => Record<string, unknown> | null,
    subresource?: "status",
  ): Promise<boolean> {
    return await retryOnConflict({ steps: 5, delayMs: 100 }, async () => {
      const current = this.#deps.nodes.get(name);
      if (!current) return false;
      const patch = build(current);
      if (!patch) return false;
      const metadata = (patch.metadata ?? {}) as Record<string, unknown>;
      const body = {
        ...patch,
        metadata: { ...metadata, resourceVersion: current.metadata?.resourceVersion },
      };
      // a condition is merged by its type (strategic), keeping the kubelet's other conditions
      if (subresource === "status") {
        await this.#deps.writer.patchNodeStatus(name, body, "strategic");
      } else await this.#deps.writer.patchNode(name, body, "merge");
      return true;
    });
  }

  /** What this process remembers of a Node (an empty record when nothing). */
  #recall(name: string): NodeMemory {
    return this.#memory.get(name) ?? NOTHING_REMEMBERED;
  }

  /** Replaces a Node's record (dropped when it holds nothing); returns it. */
  #remember(name: string, memory: NodeMemory): NodeMemory {
    if (remembersNothing(memory)) this.#memory.delete(name);
    else this.#memory.set(name, memory);
    return memory;
  }

  /** Whether the Event of `kind` in `episode` is said now for the first time (and remembered). */
  #reportOnce(name: string, kind: ReportKind, episode: string): boolean {
    const { first, memory } = reportOnce(this.#recall(name), kind, episode);
    this.#remember(name, memory);
    return first;
  }

  /** Whether a failure's cause is new, so to be said (undefined: the read worked). */
  #noteFailure(name: string, kind: FailureKind, message: string | undefined): boolean {
    const { first, memory } = noteFailure(this.#recall(name), kind, message);
    this.#remember(name, memory);
    return first;
  }

  #forget(name: string): void {
    this.#memory.delete(name);
  }
}

/** Why a terminating Pod of a Node Keelson tainted is deleted at once, for Events and logs. */
function podGcWhy(node: string): string {
  return `Keelson added the out-of-service taint to node ${node} (its machine is powered off) ` +
    "and the node is not Ready, so its pods cannot be running; kube-controller-manager's pod " +
    "garbage collector deletes terminating pods on such a node too, but only at its next pass " +
    "(every 20 s)";
}
