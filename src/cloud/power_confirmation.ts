/**
 * The one rule for when an observed power state of Off is confirmed, for every reader of a
 * `PowerObservation`: the provider's lifecycle answer (`instanceShutdown`) and the out-of-service
 * decisions. An Off is confirmed by an answer: the first Off answer and a later one at least
 * `confirmOffMs` apart, with no other answer or failure between them (any break restarts
 * `sinceMs`), so one stray answer never confirms, however old it is. Pure.
 *
 * @module
 */
import type { PowerObservation } from "./provider.ts";

/** What an Off must show before it counts. */
export interface OffConfirmationPolicy {
  /**
   * How long after the first Off answer a later Off answer confirms it (0: the first answer
   * does).
   */
  confirmOffMs: number;
  /**
   * The oldest the confirming answer may be, by the reader's clock: an answer older than this
   * (a loop that stalled) confirms nothing. @default no bound
   */
  maxAnswerAgeMs?: number;
}

/** Whether an Off is confirmed, and from when an answer can confirm it. */
export interface OffConfirmation {
  confirmed: boolean;
  /**
   * When an Off answer confirms it (ms since the epoch, the reader's clock); absent when the
   * power does not say off.
   */
  confirmableAtMs?: number;
}

/**
 * Judges whether the observed power is a confirmed Off.
 * @param power the power as last observed
 * @param nowMs the reader's clock (the observation's clock), ms since the epoch
 * @param policy the confirmation period and the oldest usable answer
 * @returns whether it is confirmed, and from when an answer confirms it
 */
export function offConfirmation(
  power: PowerObservation,
  nowMs: number,
  policy: OffConfirmationPolicy,
): OffConfirmation {
  if (power.state !== "off") return { confirmed: false };
  const confirmableAtMs = power.sinceMs + policy.confirmOffMs;
  // an Off with no answer behind it is not one the rule can confirm yet
  const answeredAt = power.answeredAtMs ?? power.sinceMs;
  const stale = policy.maxAnswerAgeMs !== undefined && nowMs - answeredAt > policy.maxAnswerAgeMs;
  return { confirmed: answeredAt >= confirmableAtMs && !stale, confirmableAtMs };
}
