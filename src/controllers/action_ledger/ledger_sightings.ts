/**
 * When this process first saw each action in the record on the leader Lease, by its own clock,
 * from every read and write of that Lease, while it stands by too (leader election reads the Lease
 * every retry period). A new term that saw its predecessor's actions as they were written counts
 * them from then, not from its own start; an action it never saw still counts from the start.
 * Seeing can only follow writing, so a sighting never makes an action count for less than a window.
 *
 * @module
 */
import type { V1Lease } from "@kubernetes/client-node";
import type { LeaseApi } from "../../kube/lease_api.ts";
import { ACTION_KINDS, type ActionKind } from "./decide_action_slot.ts";
import {
  ACTION_LEDGER_ANNOTATION,
  actionKey,
  parseLedger,
  type StoredAction,
} from "./ledger_record.ts";

/** First sightings of the recorded actions, for the life of the process. */
export class LedgerSightings {
  readonly #now: () => number;
  #first = new Map<string, number>();
  #lastText: string | undefined;

  /** @param now milliseconds since the epoch @default Date.now */
  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /**
   * Notes the actions in a Lease as read or written; forgets those no longer in it (so the
   * memory stays as small as the record).
   * @param lease the leader Lease
   */
  observe(lease: V1Lease | undefined): void {
    const text = lease?.metadata?.annotations?.[ACTION_LEDGER_ANNOTATION];
    if (text === undefined || text === this.#lastText) return;
    const parsed = parseLedger(text);
    if (!parsed.ok) return;
    this.#lastText = text;
    const now = this.#now();
    const present = new Set<string>();
    for (const kind of ACTION_KINDS) {
      for (const action of parsed.ledger[kind]) {
        const key = `${kind}|${actionKey(action)}`;
        present.add(key);
        if (!this.#first.has(key)) this.#first.set(key, now);
      }
    }
    for (const key of [...this.#first.keys()]) if (!present.has(key)) this.#first.delete(key);
  }

  /**
   * When this process first saw an action, if it has.
   * @param kind its kind
   * @param action the stored action
   * @returns milliseconds since the epoch (this clock), or undefined
   */
  firstSeen(kind: ActionKind, action: StoredAction): number | undefined {
    return this.#first.get(`${kind}|${actionKey(action)}`);
  }
}

/**
 * A Lease port that shows every Lease it reads or writes to `sightings` (leader election's).
 * @param api the port
 * @param sightings the process's sightings
 * @returns the same calls, observed
 */
export function observingLeases(api: LeaseApi, sightings: LedgerSightings): LeaseApi {
  const seen = (lease: V1Lease | undefined) => {
    sightings.observe(lease);
    return lease;
  };
  return {
    read: async (namespace, name) => seen(await api.read(namespace, name)),
    create: async (lease) => seen(await api.create(lease)) as V1Lease,
    replace: async (lease) => seen(await api.replace(lease)) as V1Lease,
  };
}
