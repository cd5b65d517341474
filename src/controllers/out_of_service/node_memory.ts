/**
 * What the out-of-service controller remembers of one Node between looks, in one record: the
 * parts of an episode the API does not hold (when this process first saw the Node NotReady, by
 * its own clock; the last ForceOff it decided; the power episode in which someone removed
 * Keelson's taint, whose marker is gone from the Node by then; when the Pod sweep began) and which
 * warnings and Events were already said. The controller keeps one such record per Node in one Map,
 * so a Node forgotten is forgotten whole and no two tables can disagree about it.
 *
 * Records are immutable and every change is a pure function here: the controller replaces a record,
 * never edits one, and drops a record that holds nothing.
 *
 * @module
 */

/** The kinds of Event said once per episode (the episode follows in `reported`). */
export type ReportKind =
  | "taint-blocked"
  | "taint-rate_limited"
  | "mismatch"
  | "fence-blocked"
  | "fence-rate_limited";

/** One Node's memory. */
export interface NodeMemory {
  /** When this process first saw the Node NotReady in the current episode (its `now`). */
  readonly notReadySinceMs?: number;
  /** When this process last decided to force the machine off (dry runs included). */
  readonly lastFenceMs?: number;
  /** The power episode (its `sinceMs`) in which someone removed the taint Keelson added. */
  readonly withdrawnInEpisodeMs?: number;
  /** When this process first found the Node's Pods due for deletion, this episode (its `now`). */
  readonly podSweepStartedMs?: number;
  /** The last failure to read the machine's power (said once per cause). */
  readonly powerError?: string;
  /** The last failure to list the Node's Pods (said once per cause). */
  readonly podListError?: string;
  /** Per kind, the episode whose Event was recorded (one Event per kind and episode). */
  readonly reported?: Readonly<Partial<Record<ReportKind, string>>>;
}

/** A Node this process remembers nothing of. */
export const NOTHING_REMEMBERED: NodeMemory = Object.freeze({});

/**
 * Whether a record holds nothing (the controller then drops it).
 * @param memory the record
 * @returns true when every field is absent
 */
export function remembersNothing(memory: NodeMemory): boolean {
  return Object.values(memory).every((v) =>
    v === undefined || (typeof v === "object" && Object.keys(v).length === 0)
  );
}

/**
 * The record after a look at the Node's Ready condition: a Ready Node ends the NotReady episode
 * (and the fencing that belonged to it, and the held Events of it; a mismatch is about a Ready
 * Node and stays said); a NotReady one starts an episode unless one runs.
 * @param memory the record
 * @param ready whether the Node's Ready condition is `True`
 * @param nowMs this process's clock
 * @returns the new record
 */
export function afterReadiness(memory: NodeMemory, ready: boolean, nowMs: number): NodeMemory {
  if (!ready) {
    return memory.notReadySinceMs === undefined ? { ...memory, notReadySinceMs: nowMs } : memory;
  }
  const { notReadySinceMs: _, lastFenceMs: __, reported, ...rest } = memory;
  const mismatch = reported?.mismatch;
  return mismatch === undefined ? rest : { ...rest, reported: { mismatch } };
}

/**
 * Whether an Event of `kind` in `episode` is said for the first time, and the record that
 * remembers it said (one episode per kind: an older one cannot come back).
 * @param memory the record
 * @param kind the Event's kind
 * @param episode the episode it belongs to
 * @returns whether to say it, and the new record
 */
export function reportOnce(
  memory: NodeMemory,
  kind: ReportKind,
  episode: string,
): { first: boolean; memory: NodeMemory } {
  if (memory.reported?.[kind] === episode) return { first: false, memory };
  return { first: true, memory: { ...memory, reported: { ...memory.reported, [kind]: episode } } };
}

/** The failures said once per cause. */
export type FailureKind = "powerError" | "podListError";

/**
 * Whether a failure is new (a different cause than the last one said), and the record that
 * remembers it; `undefined` clears it (the read worked).
 * @param memory the record
 * @param kind which failure
 * @param message the cause, or undefined when the read worked
 * @returns whether to say it, and the new record
 */
export function noteFailure(
  memory: NodeMemory,
  kind: FailureKind,
  message: string | undefined,
): { first: boolean; memory: NodeMemory } {
  if (memory[kind] === message) return { first: false, memory };
  const { [kind]: _, ...rest } = memory;
  return {
    first: message !== undefined,
    memory: message === undefined ? rest : { ...rest, [kind]: message },
  };
}

/**
 * The record once the Node cannot have its Pods swept (a new episode starts a new sweep).
 * @param memory the record
 * @returns the record without the sweep's start and its listing failure
 */
export function sweepOver(memory: NodeMemory): NodeMemory {
  const { podSweepStartedMs: _, podListError: __, ...rest } = memory;
  return rest;
}
