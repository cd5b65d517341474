/**
 * The rate limits of Keelson's destructive actions (out-of-service taints added, machines forced
 * off, Nodes deleted), decided from a record of past actions and this process's clock: at most
 * `max` actions in any window of `windowMs`. Each recorded action counts for one full window
 * from the moment this process first saw it (for its own actions: when it took them); the time
 * its writer stored is shown to people but never counted, so a remote clock that runs ahead
 * cannot stretch the limit, nor one that runs behind shorten it. Pure.
 *
 * @module
 */

/** The kinds of action the record counts, each against its own limit. */
export type ActionKind = "taint" | "fence" | "delete";

/** Every kind, in the order the record stores them. */
export const ACTION_KINDS: readonly ActionKind[] = ["taint", "fence", "delete"];

/** One recorded action (or several folded together), as this process sees it. */
export interface SeenAction {
  /** The Node acted on; undefined for folded or unaccounted actions. */
  target?: string;
  /** When its writer says it acted (RFC 3339, the writer's clock): shown, never counted. */
  at: string;
  /**
   * How many actions this stands for; `Infinity` when the record could not be read, so every
   * slot counts as taken for one window.
   */
  count: number;
  /** When this process first saw it, or took it (milliseconds since the epoch, its own clock). */
  seenMs: number;
}

/** Whether a slot is free, and what was counted. */
export interface SlotDecision {
  /** True when one more action may go ahead now. */
  free: boolean;
  /** Actions counted in the window ending now (`Infinity` while the record is unaccounted for). */
  counted: number;
  /** When a slot frees up if nothing more is taken (this clock); undefined when free or never. */
  freeAtMs?: number;
}

/**
 * Whether a recorded action still counts at `nowMs`. A first sighting later than `nowMs` (this
 * clock stepped back) counts as seen now, so a step back holds a slot at most one window longer.
 * @param action the action
 * @param nowMs this process's clock
 * @param windowMs the window
 * @returns true while it is inside the window
 */
export function stillCounts(action: SeenAction, nowMs: number, windowMs: number): boolean {
  return Math.min(action.seenMs, nowMs) + windowMs > nowMs;
}

/**
 * Decides whether one more action fits the limit.
 * @param input the recorded actions of one kind, this clock, the limit and its window
 * @returns free or not, the count, and when a slot frees up
 */
export function decideActionSlot(input: {
  actions: readonly SeenAction[];
  nowMs: number;
  max: number;
  windowMs: number;
}): SlotDecision {
  const { nowMs, max, windowMs } = input;
  const live = input.actions.filter((a) => stillCounts(a, nowMs, windowMs))
    .sort((a, b) => a.seenMs - b.seenMs);
  const counted = live.reduce((sum, a) => sum + a.count, 0);
  if (counted < max) return { free: true, counted };
  if (max <= 0) return { free: false, counted };
  // the slot frees when the oldest actions have left the window and fewer than max remain
  // what remains once live[i] and every older action have left (summed from the newest, so an
  // unaccounted Infinity is never subtracted from itself)
  let remaining = 0;
  let freeAtMs: number | undefined;
  for (let i = live.length - 1; i >= 0; i--) {
    if (remaining < max) freeAtMs = Math.min(live[i]!.seenMs, nowMs) + windowMs;
    remaining += live[i]!.count;
  }
  return freeAtMs === undefined ? { free: false, counted } : { free: false, counted, freeAtMs };
}
