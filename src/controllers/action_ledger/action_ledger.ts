/**
 * The record of Keelson's recent destructive actions, kept in the API so their rate limits hold
 * across restarts and leaders: an annotation on the leader Lease (`ledger_record.ts`), read when a
 * term starts and written, with the Lease's resourceVersion, before every action. Writing it
 * checks that this process still holds the Lease, so a process whose term has ended cannot record
 * (and so cannot take) an action, and two terms that overlap cannot both count a slot as free.
 *
 * The rules, by this process's clock only (`decide_action_slot.ts`): an action counts for one
 * full window from when this process first saw it in the record (standing by, through leader
 * election's reads: `ledger_sightings.ts`), or took it itself. A new term therefore counts the
 * previous leader's recent actions for one full window from when it first saw them, at the latest
 * from its own start.
 * A record that is missing (except on the Lease's first term ever, when there can be none) or
 * unreadable counts as every slot taken for one window, and is written so. The record is written
 * before the action: a crash between the two costs a slot, never adds one. Entries leave the
 * record once their window has passed for the leader; at most `MAX_STORED_ACTIONS` per kind are
 * kept, older ones folded into one that counts until the newest of them leaves.
 *
 * @module
 */
import type { V1Lease } from "@kubernetes/client-node";
import type { LeaseApi } from "../../kube/lease_api.ts";
import { isConflict } from "../../kube/ports.ts";
import { errorMessage } from "../../log/error_message.ts";
import { logger } from "../../log/logging.ts";
import {
  ACTION_KINDS,
  type ActionKind,
  decideActionSlot,
  type SeenAction,
  type SlotDecision,
  stillCounts,
} from "./decide_action_slot.ts";
import type { LedgerSightings } from "./ledger_sightings.ts";
import {
  ACTION_LEDGER_ANNOTATION,
  actionKey,
  emptyLedger,
  formatLedger,
  MAX_STORED_ACTIONS,
  parseLedger,
  type StoredLedger,
} from "./ledger_record.ts";

/** Tries of one read-and-write before giving up (each conflict means the Lease moved on). */
const WRITE_ATTEMPTS = 5;

/** The record cannot be read or written, or this process no longer holds the Lease. */
export class ActionLedgerError extends Error {
  /** @param message what failed @param options the cause */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ActionLedgerError";
  }
}

/** Where the record lives and who writes it. */
export interface ActionLedgerOptions {
  /** The Lease calls. */
  leases: LeaseApi;
  /** The leader Lease's namespace and name (`[leader_election]`). */
  namespace: string;
  name: string;
  /** The identity holding the Lease for this term; undefined when leader election is off. */
  holder?: string;
  /** Milliseconds since the epoch. @default Date.now */
  now?: () => number;
  /** When this process, standing by, first saw the actions (`ledger_sightings.ts`). */
  sightings?: LedgerSightings;
}

/** A claim's outcome: the slot decision, and whether this action was recorded. */
export interface Claim extends SlotDecision {
  claimed: boolean;
}

type View = Record<ActionKind, SeenAction[]>;

/** The action record for one term of leadership, shared by the controllers that act. */
export class ActionLedger {
  readonly #options: ActionLedgerOptions;
  readonly #now: () => number;
  #view: View | undefined;
  #lock: Promise<unknown> = Promise.resolve();
  #log = logger("controllers", "action-ledger");

  /** @param options the Lease, its holder and the clock */
  constructor(options: ActionLedgerOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  /** @returns true once the record has been read for this term */
  isOpen(): boolean {
    return this.#view !== undefined;
  }

  /**
   * Reads the record (once per term; later calls return at once), and writes it back when it was
   * missing or unreadable, so the next term finds what this one assumed.
   * @throws {ActionLedgerError} when it cannot be read or written, or the Lease is not held
   */
  async open(): Promise<void> {
    await this.#serially(async () => {
      if (this.#view) return;
      await this.#update((lease, now) => {
        const first = this.#firstView(lease, now);
        return { view: first.view, write: first.rewrite };
      });
    });
  }

  /**
   * Whether one more action of `kind` fits now, from what this term has read and written.
   * @param kind the action
   * @param nowMs this process's clock
   * @param max actions per window (0: none)
   * @param windowMs the window
   * @returns the decision; never free before the record has been read
   */
  slot(kind: ActionKind, nowMs: number, max: number, windowMs: number): SlotDecision {
    if (!this.#view) return { free: false, counted: Infinity };
    return decideActionSlot({ actions: this.#view[kind], nowMs, max, windowMs });
  }

  /**
   * Records one action of `kind` on `target` if it fits, before it is taken: reads the Lease,
   * checks it is still held, decides on the freshest record and writes it with the Lease's
   * resourceVersion.
   * @param kind the action
   * @param target the Node acted on
   * @param nowMs this process's clock (the time written, and the action's first sighting)
   * @param max actions per window
   * @param windowMs the window
   * @returns whether it was recorded (take the action only then), and the decision
   * @throws {ActionLedgerError} when the record cannot be read or written, or the Lease is lost
   */
  async claim(
    kind: ActionKind,
    target: string,
    nowMs: number,
    max: number,
    windowMs: number,
  ): Promise<Claim> {
    return await this.#serially(async () => {
      let outcome: Claim = { free: false, counted: Infinity, claimed: false };
      await this.#update((lease, now) => {
        const { view, rewrite } = this.#view
          ? this.#merged(lease, now)
          : this.#firstView(lease, now);
        view[kind] = view[kind].filter((a) => stillCounts(a, nowMs, windowMs));
        const decision = decideActionSlot({ actions: view[kind], nowMs, max, windowMs });
        if (!decision.free) {
          outcome = { ...decision, claimed: false };
          return { view, write: rewrite };
        }
        view[kind] = fold([...view[kind], {
          target,
          at: new Date(nowMs).toISOString(),
          count: 1,
          seenMs: nowMs,
        }]);
        outcome = { ...decision, claimed: true };
        return { view, write: true };
      });
      return outcome;
    });
  }

  /**
   * Drops the actions of `kind` whose window has passed from the stored record (a write only
   * when there are some), so a later term does not count them again.
   * @param kind the action
   * @param windowMs its window
   * @throws {ActionLedgerError} when the record cannot be read or written
   */
  async tidy(kind: ActionKind, windowMs: number): Promise<void> {
    const now = this.#now();
    if (!this.#view?.[kind].some((a) => !stillCounts(a, now, windowMs))) return;
    await this.#serially(async () => {
      await this.#update((lease, at) => {
        const { view } = this.#merged(lease, at);
        view[kind] = view[kind].filter((a) => stillCounts(a, at, windowMs));
        return { view, write: true };
      });
    });
  }

  /** Runs `work` after the previous call has finished (one read-and-write at a time). */
  #serially<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#lock.then(work, work);
    this.#lock = run.catch(() => undefined);
    return run;
  }

  /**
   * Reads the Lease, lets `change` build the next view from it, and writes that back when it
   * says so; again from a fresh read on a conflict. The view is this term's only once written.
   */
  async #update(
    change: (lease: V1Lease | undefined, now: number) => { view: View; write: boolean },
  ): Promise<void> {
    const { leases, namespace, name } = this.#options;
    const ref = `${namespace}/${name}`;
    for (let attempt = 1;; attempt++) {
      let lease: V1Lease | undefined;
      try {
        lease = await leases.read(namespace, name);
      } catch (error) {
        throw new ActionLedgerError(
          `Cannot read the action record on lease "${ref}": ${errorMessage(error)}`,
          { cause: error },
        );
      }
      this.#checkHolder(lease, ref);
      const next = change(lease, this.#now());
      if (!next.write) {
        this.#view = next.view;
        return;
      }
      const annotations = {
        ...lease?.metadata?.annotations,
        [ACTION_LEDGER_ANNOTATION]: formatLedger(stored(next.view)),
      };
      try {
        if (lease) {
          await leases.replace({ ...lease, metadata: { ...lease.metadata, annotations } });
        } else {
          await leases.create({
            apiVersion: "coordination.k8s.io/v1",
            kind: "Lease",
            metadata: { namespace, name, annotations },
            spec: {},
          });
        }
        this.#view = next.view;
        return;
      } catch (error) {
        if (isConflict(error) && attempt < WRITE_ATTEMPTS) continue;
        throw new ActionLedgerError(
          `Cannot write the action record on lease "${ref}": ${errorMessage(error)}`,
          { cause: error },
        );
      }
    }
  }

  #checkHolder(lease: V1Lease | undefined, ref: string): void {
    const { holder } = this.#options;
    if (holder === undefined) return;
    const current = lease?.spec?.holderIdentity ?? "";
    if (current !== holder) {
      throw new ActionLedgerError(
        `This process no longer holds lease "${ref}" (its holder is "${current}"): no action ` +
          "is recorded or taken",
      );
    }
  }

  /** The view at the start of a term, and whether the record must be written. */
  #firstView(lease: V1Lease | undefined, now: number): { view: View; rewrite: boolean } {
    const text = lease?.metadata?.annotations?.[ACTION_LEDGER_ANNOTATION];
    if (text === undefined) {
      // a Lease this process created, or none when leader election is off: no earlier term
      // can have acted; any other Lease had holders that left no record (an older Keelson)
      const first = this.#options.holder === undefined
        ? lease === undefined
        : (lease?.spec?.leaseTransitions ?? 0) === 0;
      if (first) return { view: this.#seen(emptyLedger(), now), rewrite: true };
      this.#log.warn(
        "The leader Lease holds no record of earlier power actions and Node deletions; until " +
          "one window has passed, every such action counts as already taken",
      );
      return { view: unaccounted(now), rewrite: true };
    }
    const parsed = parseLedger(text);
    if (!parsed.ok) {
      this.#log.warn(
        "The record of earlier power actions and Node deletions on the leader Lease " +
          "(annotation {annotation}) cannot be read: {reason}; until one window has passed, " +
          "every such action counts as already taken",
        { annotation: ACTION_LEDGER_ANNOTATION, reason: parsed.reason },
      );
      return { view: unaccounted(now), rewrite: true };
    }
    return { view: this.#seen(parsed.ledger, now), rewrite: false };
  }

  /**
   * The stored record merged into this term's view: what this process already saw keeps its
   * first sighting; what is new to it is seen now; what it saw but the record lost still counts.
   * A record gone or unreadable since the term began counts as every slot taken, and must be
   * written again (`rewrite`).
   */
  #merged(lease: V1Lease | undefined, now: number): { view: View; rewrite: boolean } {
    const view = this.#view ?? unaccounted(now);
    const text = lease?.metadata?.annotations?.[ACTION_LEDGER_ANNOTATION];
    const parsed = text === undefined ? undefined : parseLedger(text);
    const incoming = parsed?.ok ? this.#seen(parsed.ledger, now) : unaccounted(now);
    if (!parsed?.ok) {
      this.#log.warn(
        "The record of power actions and Node deletions on the leader Lease was removed or " +
          "changed into something unreadable during this term; until one window has passed, " +
          "every such action counts as already taken",
      );
    }
    const out = {} as View;
    for (const kind of ACTION_KINDS) {
      const known = new Map(view[kind].map((a) => [actionKey(a), a]));
      const merged = view[kind].map((a) => ({ ...a, seenMs: Math.min(a.seenMs, now) }));
      for (const action of incoming[kind]) {
        if (!known.has(actionKey(action))) merged.push(action);
      }
      out[kind] = fold(merged);
    }
    return { view: out, rewrite: !parsed?.ok };
  }

  /** A stored record as seen now: from this process's first sighting if earlier, else now. */
  #seen(ledger: StoredLedger, now: number): View {
    const sightings = this.#options.sightings;
    const view = {} as View;
    for (const kind of ACTION_KINDS) {
      view[kind] = ledger[kind].map((a) => ({
        ...a,
        seenMs: Math.min(now, sightings?.firstSeen(kind, a) ?? now),
      }));
    }
    return view;
  }
}

function unaccounted(now: number): View {
  const at = new Date(now).toISOString();
  const view = {} as View;
  for (const kind of ACTION_KINDS) view[kind] = [{ at, count: Infinity, seenMs: now }];
  return view;
}

function stored(view: View): StoredLedger {
  const ledger = emptyLedger();
  for (const kind of ACTION_KINDS) {
    ledger[kind] = view[kind].map(({ target, at, count }) => ({
      ...(target === undefined ? {} : { target }),
      at,
      count,
    }));
  }
  return ledger;
}

/**
 * At most `MAX_STORED_ACTIONS`, the oldest folded into one that counts until the newest of them
 * leaves the window (later than each would have: never fewer counted).
 */
function fold(actions: SeenAction[]): SeenAction[] {
  if (actions.length <= MAX_STORED_ACTIONS) return actions;
  const sorted = [...actions].sort((a, b) => a.seenMs - b.seenMs);
  const old = sorted.slice(0, sorted.length - MAX_STORED_ACTIONS + 1);
  const latest = old.reduce((a, b) => (Date.parse(b.at) > Date.parse(a.at) ? b : a));
  return [{
    at: latest.at,
    count: old.reduce((sum, a) => sum + a.count, 0),
    seenMs: Math.max(...old.map((a) => a.seenMs)),
  }, ...sorted.slice(old.length)];
}
