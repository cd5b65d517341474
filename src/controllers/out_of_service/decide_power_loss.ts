/**
 * Whether a Node that kube-controller-manager still shows Ready has lost its power, judged from
 * two witnesses that share no failure: the machine's power controller (BMC) answering Off, and
 * the kubelet's own Lease (`kube-node-lease/<node>`) no longer being renewed. A kubelet renews
 * its Lease every quarter of the Lease's `leaseDurationSeconds` (10 s by default), and
 * kube-controller-manager marks the Node NotReady only after its grace period (40–50 s); with both
 * witnesses agreeing, Keelson need not wait for it.
 *
 * Every condition must hold, so either witness saying "alive" (or saying nothing) is enough to
 * do nothing:
 * - the power has answered `off` without a break for the confirmation period (two answers at
 *   least `confirmOffMs` apart, as for a NotReady Node);
 * - this reader saw the Lease change (in this term of leadership) and has seen no change since
 *   for the silence bound: the larger of the configured bound and 1.2 renewal intervals of the
 *   Lease's own duration. The Lease's times are the kubelet's clock and never read as times:
 *   only this reader's monotonic clock between the changes it saw counts;
 * - the last change seen came before the first Off answer: a kubelet renewing after its BMC
 *   said Off is running, so that Off is not its machine's, and nothing is done for the whole
 *   Off episode;
 * - the watch is shown to deliver: another Node's Lease was seen changing within the last
 *   renewal interval and at least one renewal interval after this Lease's last change (a stalled
 *   watch would make every Lease look silent).
 *
 * The same observations veto the out-of-service taint of a NotReady Node too
 * (`kubeletSaysRunning`): a kubelet seen renewing within the bound, or renewing after its power
 * first answered Off, is a running machine.
 *
 * Pure: the controller gathers the observations.
 *
 * @module
 */
import type { PowerObservation } from "../../cloud/provider.ts";
import { offConfirmation } from "../../cloud/power_confirmation.ts";

/** The kubelet renews its Lease every this fraction of the Lease's duration (kubelet's constant). */
export const KUBELET_RENEW_FRACTION = 0.25;
/**
 * The silence bound is at least this many renewal intervals, whatever is configured: a renewal
 * may come late by the time its request takes (kubelet waits a full interval after each one).
 */
export const MIN_SILENT_RENEWALS = 1.2;
/** Lease durations beyond this are not believed (a Lease is what its writer says it is). */
export const MAX_LEASE_DURATION_SECONDS = 3600;

/** What this reader saw of one Node's kubelet Lease, as durations by its own clock. */
export interface KubeletLeaseView {
  /** Milliseconds since this reader saw the Lease change; undefined when it never did. */
  changedAgoMs: number | undefined;
  /** The Lease's `spec.leaseDurationSeconds`; undefined when absent or not a sane integer. */
  leaseDurationSeconds: number | undefined;
  /** Milliseconds since this reader saw any other kubelet Lease change; undefined when never. */
  otherChangedAgoMs: number | undefined;
}

/** The settings the rule reads. */
export interface PowerLossPolicy {
  /** How long the power must have said `off` without a break. */
  confirmOffMs: number;
  /** The configured silence bound of the kubelet's Lease; 0 turns the rule off. */
  leaseSilenceMs: number;
}

/** The verdict. */
export type PowerLossVerdict =
  | {
    witnessed: true;
    /** How long the Lease has been silent, as this reader saw it. */
    silentForMs: number;
    /** The silence bound that applied. */
    boundMs: number;
  }
  | {
    witnessed: false;
    /** Why not, for tests and logs. */
    why: string;
    /** When a running period may yet end in a verdict, how soon to look again. */
    recheckAfterMs?: number;
  };

/**
 * The silence bound for a Lease of this duration.
 * @param configuredMs the configured bound
 * @param leaseDurationSeconds the Lease's duration
 * @returns the larger of the configured bound and 1.2 of the kubelet's renewal intervals
 */
export function leaseSilenceBoundMs(configuredMs: number, leaseDurationSeconds: number): number {
  return Math.max(configuredMs, renewIntervalMs(leaseDurationSeconds) * MIN_SILENT_RENEWALS);
}

/** The Lease duration assumed when a Lease states none usable (the kubelet's default). */
const DEFAULT_LEASE_DURATION_SECONDS = 40;

/**
 * A renewal seen this long after the power's first Off answer cannot be one the kubelet sent
 * before its machine lost power and the watch delivered late.
 */
export const RENEWAL_AFTER_OFF_MARGIN_MS = 2_000;

/**
 * Why the kubelet's Lease says its machine is running, whatever its power controller says, or
 * undefined when it does not: this reader saw it renewed within the silence bound, or renewed
 * after the power first answered Off (then that Off is not this machine's, for as long as it
 * lasts). No out-of-service taint then, Ready or not.
 * @param lease what this reader saw of the Node's kubelet Lease; undefined when it has none
 * @param power the power as last observed
 * @param nowMs milliseconds since the epoch (the power's clock)
 * @param configuredMs the configured silence bound (0: only the Lease's own renewal interval)
 * @returns the reason, or undefined
 */
export function kubeletSaysRunning(
  lease: KubeletLeaseView | undefined,
  power: PowerObservation,
  nowMs: number,
  configuredMs: number,
): string | undefined {
  const changedAgo = lease?.changedAgoMs;
  if (changedAgo === undefined || !(changedAgo >= 0)) return undefined;
  const duration = usableDuration(lease?.leaseDurationSeconds) ?? DEFAULT_LEASE_DURATION_SECONDS;
  const boundMs = leaseSilenceBoundMs(configuredMs, duration);
  const ago = `${Math.round(changedAgo / 100) / 10}s ago`;
  if (changedAgo < boundMs) return `its kubelet renewed its Lease ${ago}`;
  if (power.state === "off" && changedAgo < nowMs - power.sinceMs - RENEWAL_AFTER_OFF_MARGIN_MS) {
    return `its kubelet renewed its Lease ${ago}, after the power first answered off`;
  }
  return undefined;
}

/**
 * How long until a renewal seen within the silence bound stops saying the machine runs.
 * @param lease what this reader saw of the Node's kubelet Lease; undefined when it has none
 * @param configuredMs the configured silence bound
 * @returns the milliseconds left, or undefined when no renewal is within the bound
 */
export function renewalSaysRunningForMs(
  lease: KubeletLeaseView | undefined,
  configuredMs: number,
): number | undefined {
  const changedAgo = lease?.changedAgoMs;
  if (changedAgo === undefined || !(changedAgo >= 0)) return undefined;
  const duration = usableDuration(lease?.leaseDurationSeconds) ?? DEFAULT_LEASE_DURATION_SECONDS;
  const left = leaseSilenceBoundMs(configuredMs, duration) - changedAgo;
  return left > 0 ? left : undefined;
}

function usableDuration(seconds: number | undefined): number | undefined {
  return seconds !== undefined && Number.isInteger(seconds) && seconds >= 1 &&
      seconds <= MAX_LEASE_DURATION_SECONDS
    ? seconds
    : undefined;
}

function renewIntervalMs(leaseDurationSeconds: number): number {
  return leaseDurationSeconds * 1000 * KUBELET_RENEW_FRACTION;
}

/**
 * Judges whether both witnesses say the machine lost its power.
 * @param power the power as last observed (already trusted: `off` only with an answer behind it)
 * @param lease what this reader saw of the Node's kubelet Lease; undefined when it has none
 * @param nowMs milliseconds since the epoch, by this process's clock (the power's clock)
 * @param policy the confirmation period and the silence bound
 * @returns witnessed, or why not
 */
export function judgePowerLoss(
  power: PowerObservation,
  lease: KubeletLeaseView | undefined,
  nowMs: number,
  policy: PowerLossPolicy,
): PowerLossVerdict {
  if (policy.leaseSilenceMs <= 0) return no("the kubelet Lease witness is off");
  if (power.state !== "off" || power.answeredAtMs === undefined) {
    return no("the power does not say off");
  }
  const offForMs = nowMs - power.sinceMs;
  const off = offConfirmation(power, nowMs, { confirmOffMs: policy.confirmOffMs });
  if (!(offForMs >= 0) || !off.confirmed) {
    return no("the off is not confirmed yet", Math.max(off.confirmableAtMs! - nowMs, 1000));
  }
  if (lease === undefined) return no("the Node has no kubelet Lease in the cache");
  const duration = usableDuration(lease.leaseDurationSeconds);
  if (duration === undefined) return no("the kubelet Lease has no usable leaseDurationSeconds");
  const changedAgo = lease.changedAgoMs;
  if (changedAgo === undefined || !(changedAgo >= 0)) {
    return no("this reader has not seen the kubelet renew its Lease");
  }
  if (changedAgo <= offForMs) {
    return no("the kubelet renewed its Lease after the power first answered off");
  }
  const boundMs = leaseSilenceBoundMs(policy.leaseSilenceMs, duration);
  if (changedAgo < boundMs) {
    return no("the kubelet Lease is renewing", boundMs - changedAgo);
  }
  const renewMs = renewIntervalMs(duration);
  const other = lease.otherChangedAgoMs;
  if (other === undefined || !(other >= 0) || other > renewMs || other > changedAgo - renewMs) {
    return no("the watch has not shown another kubelet's renewal since this one was due", 1000);
  }
  return { witnessed: true, silentForMs: changedAgo, boundMs };
}

function no(why: string, recheckAfterMs?: number): PowerLossVerdict {
  return recheckAfterMs === undefined
    ? { witnessed: false, why }
    : { witnessed: false, why, recheckAfterMs };
}
