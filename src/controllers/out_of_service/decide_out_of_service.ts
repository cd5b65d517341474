/**
 * What the out-of-service controller should do about one Node, decided from the Node, the power
 * its machine's power controller reports, this process's clock and the guards: add Kubernetes'
 * non-graceful-shutdown taint (`node.kubernetes.io/out-of-service=nodeshutdown:NoExecute`) to a
 * NotReady Node whose machine has been `off` for the confirmation period, mark a Ready Node
 * NotReady when its power is confirmed off and its kubelet's Lease has gone silent (two witnesses,
 * `decide_power_loss.ts`), remove only a taint Keelson added once the Node is Ready again, warn
 * when the power says `off` for a Ready Node, and (opt-in) force a NotReady Node's machine off
 * while its power still says `on`. Pure: the controller gathers the inputs and carries the
 * decision out.
 *
 * @module
 */
import type { V1Node, V1Taint } from "@kubernetes/client-node";
import type { PowerObservation } from "../../cloud/provider.ts";
import { offConfirmation } from "../../cloud/power_confirmation.ts";
import { readyStatus } from "../node_lifecycle/decide_lifecycle.ts";
import {
  judgePowerLoss,
  type KubeletLeaseView,
  kubeletSaysRunning,
  renewalSaysRunningForMs,
} from "./decide_power_loss.ts";

/** Kubernetes' taint for a Node that is shut down non-gracefully (upstream's convention). */

/** How soon to look again when only the power controller's next answer can confirm an Off. */
const RECHECK_FOR_ANSWER_MS = 1_000;
export const OUT_OF_SERVICE_TAINT: Readonly<V1Taint> = Object.freeze({
  key: "node.kubernetes.io/out-of-service",
  value: "nodeshutdown",
  effect: "NoExecute",
});

/**
 * Keelson's marker on a Node whose out-of-service taint Keelson added: when it did so (RFC 3339,
 * by this process's clock). A taint without this annotation is someone else's and never removed.
 */
export const OUT_OF_SERVICE_MARKER = "keelson.io/out-of-service-added";

/**
 * How long after the off has been confirmed a Ready Node is reported as a mismatch: a kubelet
 * that lost power still shows Ready until kube-controller-manager's node-monitor-grace-period
 * (40–50 s) has passed, so an earlier Warning would accuse every real power loss.
 */
export const MISMATCH_GRACE_MS = 60_000;

/** Labels that make a Node a control-plane host (kubeadm's, and its legacy name). */
export const CONTROL_PLANE_LABELS = [
  "node-role.kubernetes.io/control-plane",
  "node-role.kubernetes.io/master",
] as const;

/** What `fencing` does. */
export type FencingMode = "off" | "dry-run" | "on";

/** The `[power]` policy, read on every sync so reloads apply. */
export interface OutOfServicePolicy {
  /** The one switch: false adds no taint and fences nothing (own taints are still removed). */
  enabled: boolean;
  /** How long the power must have said `off` without a break. */
  confirmOffMs: number;
  /** Fencing: off, report only, or act. */
  fencing: FencingMode;
  /** How long a Node must have been NotReady (as this process saw it) before fencing. */
  fenceAfterMs: number;
  /**
   * How long a Ready Node's kubelet Lease must have been silent, its machine confirmed off,
   * before Keelson marks it NotReady itself (`decide_power_loss.ts`); 0 or absent: never.
   */
  leaseSilenceMs?: number;
}

/** What the guards say right now, gathered by the controller. */
export interface GuardContext {
  /** Set while power actions are held (e.g. the last config reload was rejected): why. */
  held?: string;
  /** Whether the Node is a control-plane host. */
  controlPlane: boolean;
  /** Control-plane Nodes other than this one that are Ready and not out of service. */
  otherControlPlaneInService: number;
  /** Whether the Node is the host this process runs on (never tainted or fenced). */
  self: boolean;
  /** Whether the taint rate limit has a free slot now. */
  taintSlotFree: boolean;
  /** Whether the fencing rate limit has a free slot now. */
  fenceSlotFree: boolean;
}

/** Everything the decision reads. */
export interface OutOfServiceInput {
  node: V1Node;
  /** The power as last observed; null when the machine has no power controller. */
  power: PowerObservation | null;
  /** Milliseconds since the epoch, by this process's clock. */
  nowMs: number;
  policy: OutOfServicePolicy;
  /** When this process first saw the Node NotReady in the current episode; undefined if Ready. */
  notReadySinceMs: number | undefined;
  /** When this process last forced the machine off (any result); undefined when never. */
  lastFenceMs: number | undefined;
  /**
   * The power episode (its `sinceMs`) in which someone removed the taint Keelson added: not
   * added again until the power changes. Undefined when none.
   */
  withdrawnInEpisodeMs?: number;
  /** What this process saw of the Node's kubelet Lease; undefined when it has none. */
  kubeletLease?: KubeletLeaseView;
  guards: GuardContext;
}

/** One thing to do; every kind but `forget-marker` is an Event. */
export type OutOfServiceAction =
  | { kind: "taint"; message: string }
  | { kind: "taint-held"; reason: "blocked" | "rate_limited"; message: string }
  | { kind: "untaint"; message: string }
  | { kind: "mark-not-ready"; message: string }
  | { kind: "forget-marker" }
  | { kind: "mismatch"; message: string }
  | { kind: "fence"; dryRun: boolean; message: string }
  | { kind: "fence-held"; reason: "blocked" | "rate_limited"; message: string };

/** The decision for one Node. */
export interface OutOfServiceDecision {
  /** Ready condition status (`Unknown` when missing). */
  ready: "True" | "False" | "Unknown";
  actions: OutOfServiceAction[];
  /** Look again after this long (a confirmation or fencing period still running). */
  recheckAfterMs?: number;
}

/**
 * Decides what to do about one Node.
 * @param input the Node, its power, the clock, the policy, the episode memory and the guards
 * @returns the actions (possibly none) and when to look again
 */
export function decideOutOfService(input: OutOfServiceInput): OutOfServiceDecision {
  const { node, nowMs, policy } = input;
  const name = node.metadata?.name ?? "";
  const ready = readyStatus(node);
  const decision: OutOfServiceDecision = { ready, actions: [] };
  const taint = (node.spec?.taints ?? []).find((t) => t.key === OUT_OF_SERVICE_TAINT.key);
  const marked = node.metadata?.annotations?.[OUT_OF_SERVICE_MARKER] !== undefined;
  const power = trustedPower(input.power);
  const seen = power ? describePower(power, nowMs) : "no power state";

  if (marked && !taint) {
    // someone removed our taint: the marker must not claim a later, foreign one, and the
    // taint is not added again in this power episode (that would fight the person)
    decision.actions.push({ kind: "forget-marker" });
    if (ready !== "True") return decision;
  }
  if (ready === "True") {
    if (marked && taint) {
      decision.actions.push({
        kind: "untaint",
        message: `Removed ${taintText()} that Keelson added: node ${name} is Ready again (${seen})`,
      });
    }
    if (power?.state === "off") {
      const lost = powerLoss(input, power, taint !== undefined, seen);
      if (lost.action) {
        decision.actions.push(lost.action);
        return decision;
      }
      // a Ready Node whose Off could have been confirmed a grace ago is a mismatch
      const off = offConfirmation(power, nowMs, { confirmOffMs: policy.confirmOffMs });
      const mismatchAt = off.confirmableAtMs! + MISMATCH_GRACE_MS;
      if (nowMs >= mismatchAt) {
        decision.actions.push({
          kind: "mismatch",
          message: `The power controller reports node ${name}'s machine ${seen}, but the node ` +
            `is Ready: the inventory's power controller may belong to another machine; no ` +
            `out-of-service taint while the node is Ready`,
        });
      } else {
        decision.recheckAfterMs = Math.min(mismatchAt - nowMs, lost.recheckAfterMs ?? Infinity);
      }
    }
    return decision;
  }

  if (!policy.enabled || taint || !power) return decision;
  if (power.state === "off" && power.sinceMs === input.withdrawnInEpisodeMs) return decision;
  const readyText = `Ready condition ${ready}`;
  if (power.state === "off") {
    const off = offConfirmation(power, nowMs, { confirmOffMs: policy.confirmOffMs });
    if (!off.confirmed) {
      decision.recheckAfterMs = Math.max(off.confirmableAtMs! - nowMs, RECHECK_FOR_ANSWER_MS);
      return decision;
    }
    const what = `node ${name} (${readyText}; power ${seen})`;
    const running = kubeletSaysRunning(
      input.kubeletLease,
      power,
      nowMs,
      policy.leaseSilenceMs ?? 0,
    );
    const blocked = input.guards.self
      ? "it is the host this Keelson runs on, so it is running: the power controller that says " +
        "off cannot be its machine's (check its [machines.bmc])"
      : running
      ? `${running} (kube-node-lease/${name}, as this process saw it), so the machine is ` +
        "running: the power controller that says off cannot be its machine's (check its " +
        "[machines.bmc])"
      : blockedBy(input.guards, "tainting");
    if (blocked) {
      decision.actions.push({
        kind: "taint-held",
        reason: "blocked",
        message: `Not adding ${taintText()} to ${what}: ${blocked}`,
      });
      // a renewal within the bound says "running" only until the bound has passed
      const renewal = running
        ? renewalSaysRunningForMs(input.kubeletLease, policy.leaseSilenceMs ?? 0)
        : undefined;
      if (renewal !== undefined) decision.recheckAfterMs = renewal;
    } else if (!input.guards.taintSlotFree) {
      decision.actions.push({
        kind: "taint-held",
        reason: "rate_limited",
        message: `Not adding ${taintText()} to ${what} yet: max_actions_per_interval reached`,
      });
    } else {
      decision.actions.push({
        kind: "taint",
        message: `Added ${taintText()} to ${what}: its machine has been off for at least ` +
          `${
            seconds(policy.confirmOffMs)
          } while the node is not Ready, so kube-controller-manager ` +
          `may force-delete its pods and detach their volumes`,
      });
    }
    return decision;
  }
  if (power.state === "on" && policy.fencing !== "off") fence(input, decision, readyText, seen);
  return decision;
}

/**
 * A Ready Node whose machine both witnesses say lost its power (`decide_power_loss.ts`) is marked
 * NotReady, as kube-controller-manager would after its grace period: the out-of-service taint
 * then follows on the NotReady path, and kube-controller-manager's pod garbage collector, which
 * force-deletes only on a Node that is not Ready, can act. Held silently by every guard of the
 * taint (the NotReady path reports them once kube-controller-manager marks the Node).
 */
function powerLoss(
  input: OutOfServiceInput,
  power: PowerObservation,
  tainted: boolean,
  seen: string,
): { action?: OutOfServiceAction; recheckAfterMs?: number } {
  const { policy, guards } = input;
  if (!policy.enabled || tainted || power.sinceMs === input.withdrawnInEpisodeMs) return {};
  if (guards.self || blockedBy(guards, "tainting") || !guards.taintSlotFree) return {};
  const verdict = judgePowerLoss(power, input.kubeletLease, input.nowMs, {
    confirmOffMs: policy.confirmOffMs,
    leaseSilenceMs: policy.leaseSilenceMs ?? 0,
  });
  if (!verdict.witnessed) {
    return verdict.recheckAfterMs === undefined ? {} : { recheckAfterMs: verdict.recheckAfterMs };
  }
  const name = input.node.metadata?.name ?? "";
  return {
    action: {
      kind: "mark-not-ready",
      message: `Set node ${name}'s Ready condition to Unknown: its machine has been off for at ` +
        `least ${seconds(policy.confirmOffMs)} (power ${seen}) and its kubelet has not renewed ` +
        `Lease kube-node-lease/${name} for ${seconds(verdict.silentForMs)} as this process saw ` +
        `it (bound ${seconds(verdict.boundMs)}; its last renewal came before the first Off ` +
        `answer), so it is not waiting for kube-controller-manager's grace period; ${taintText()} ` +
        `follows`,
    },
  };
}

function fence(
  input: OutOfServiceInput,
  decision: OutOfServiceDecision,
  readyText: string,
  seen: string,
): void {
  const { node, nowMs, policy } = input;
  const name = node.metadata?.name ?? "";
  if (input.notReadySinceMs === undefined) return;
  const dueAt = Math.max(
    input.notReadySinceMs + policy.fenceAfterMs,
    input.lastFenceMs === undefined ? 0 : input.lastFenceMs + policy.fenceAfterMs,
  );
  if (nowMs < dueAt) {
    decision.recheckAfterMs = Math.min(decision.recheckAfterMs ?? Infinity, dueAt - nowMs);
    return;
  }
  const what = `node ${name}'s machine (${readyText} for ${
    seconds(nowMs - input.notReadySinceMs)
  } as this process saw it; power ${seen})`;
  const blocked = input.guards.self
    ? "it is the host this Keelson runs on"
    : blockedBy(input.guards, "fencing");
  if (blocked) {
    decision.actions.push({
      kind: "fence-held",
      reason: "blocked",
      message: `Not forcing ${what} off: ${blocked}`,
    });
  } else if (!input.guards.fenceSlotFree) {
    decision.actions.push({
      kind: "fence-held",
      reason: "rate_limited",
      message: `Not forcing ${what} off yet: max_actions_per_interval reached`,
    });
  } else {
    const dryRun = policy.fencing === "dry-run";
    decision.actions.push({
      kind: "fence",
      dryRun,
      message: `${dryRun ? "Would force" : "Forcing"} ${what} off (ForceOff), so that the ` +
        `out-of-service path can proceed${dryRun ? ' (fencing = "dry-run")' : ""}`,
    });
  }
}

function blockedBy(guards: GuardContext, doing: string): string | undefined {
  if (guards.held) return guards.held;
  if (guards.controlPlane && guards.otherControlPlaneInService === 0) {
    return `it is a control-plane host and no other control-plane node is Ready without the ` +
      `out-of-service taint; Keelson never takes the last control-plane hosts out (${doing} held)`;
  }
  return undefined;
}

/** `off` counts only with a valid answer behind it (the contract says so; fail closed anyway). */
function trustedPower(power: PowerObservation | null): PowerObservation | null {
  if (!power) return null;
  if (power.state !== "unknown" && power.answeredAtMs === undefined) {
    return { ...power, state: "unknown" };
  }
  return power;
}

function describePower(power: PowerObservation, nowMs: number): string {
  return `${power.state} since ${new Date(power.sinceMs).toISOString()} (${
    seconds(Math.max(0, nowMs - power.sinceMs))
  } ago; ${power.detail})`;
}

function taintText(): string {
  const t = OUT_OF_SERVICE_TAINT;
  return `taint ${t.key}=${t.value}:${t.effect}`;
}

function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10}s`;
}

/**
 * Whether a Node is a control-plane host (kubeadm's role labels).
 * @param node the Node
 * @returns true when it carries a control-plane role label
 */
export function isControlPlaneNode(node: V1Node): boolean {
  const labels = node.metadata?.labels ?? {};
  return CONTROL_PLANE_LABELS.some((label) => labels[label] !== undefined);
}

/**
 * Whether a Node carries the out-of-service taint (anyone's).
 * @param node the Node
 * @returns true when a taint with the out-of-service key is on it
 */
export function hasOutOfServiceTaint(node: V1Node): boolean {
  return (node.spec?.taints ?? []).some((t) => t.key === OUT_OF_SERVICE_TAINT.key);
}
