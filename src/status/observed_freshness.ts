/**
 * Whether a renewed record (a heartbeat Lease, the leader's Lease) is still being renewed, judged
 * by this reader's own observation, as client-go's leader election judges a Lease
 * (`src/kube/leader_election.ts`): a record is fresh while this reader saw it change within its
 * duration, by this reader's monotonic clock. The time the writer put into it (`renewTime`) is
 * the writer's clock: a host whose clock runs 9 minutes fast would stay "renewed 0 ms ago" for 9
 * minutes after it died, one 20 s slow would look dead while alive. It is shown as a claim,
 * never judged.
 *
 * Stricter than leader election in one point: a record as it was at this reader's first read was
 * written at an unknown time, so it is **unobserved** (neither fresh nor silent) until it either
 * changes (fresh from then) or stays unchanged for its whole duration (silent). A record that
 * appears after the first complete read was written while this reader watched: it is fresh.
 *
 * A record may list members (a heartbeat lists the VIPs its host serves): the reader also
 * remembers when it saw each member appear, so a claim can be weighed against a newer one (a host
 * that has not renewed since another host took its VIP may simply have died).
 *
 * @module
 */
import type { V1Lease } from "@kubernetes/client-node";
import { recordKey } from "../kube/lease_record.ts";

/** How a record is judged. */
export type Freshness = "fresh" | "silent" | "unobserved";

/** A record as this reader judges it now. */
export interface Observation {
  freshness: Freshness;
  /**
   * Milliseconds since this reader saw the record change; when it never saw it change
   * (`changeSeen` false), since its first read of it: the record is at least that old.
   */
  ageMs: number;
  /** Whether this reader saw the record change (else `ageMs` is a lower bound). */
  changeSeen: boolean;
  /** When (the reader's clock) it last saw the record change; undefined when never. */
  changedAtMs: number | undefined;
  /**
   * When (the reader's clock) it saw each member appear in the record, for the members that
   * appeared while it watched; a member listed since before is absent.
   */
  memberSince: ReadonlyMap<string, number>;
}

/** One record as one read returned it. */
export interface RecordVersion {
  /** Its id within its kind, e.g. the host of a heartbeat. */
  id: string;
  /** Its current key (`leaseRecordKey`): a different key is a change. */
  key: string;
  /** What it lists (e.g. the VIPs a heartbeat reports serving). @default none */
  members?: Iterable<string>;
}

/** The reader's monotonic clock in ms (never steps with the wall clock). */
export function monotonicNow(): number {
  return performance.now();
}

/**
 * The record of a Lease as leader election compares it: holder, duration, acquire and renew
 * times, transitions. A writer renewing changes its renewTime, so the key changes.
 * @param lease the Lease
 * @returns a string that changes whenever the record changes
 */
export function leaseRecordKey(lease: V1Lease): string {
  return recordKey(lease);
}

interface Seen {
  key: string;
  firstSeenMs: number;
  changedMs: number | undefined;
  /** Member -> when it appeared (undefined: listed since before this reader watched). */
  members: Map<string, number | undefined>;
}

/** What this reader saw of one kind of record (one list). */
interface Kind {
  seen: Map<string, Seen>;
  /** Time of the first complete read; undefined before. */
  baselineMs: number | undefined;
}

const NO_MEMBERS: ReadonlyMap<string, number> = new Map();

/**
 * Remembers, per record, when this reader last saw it change. Records come in kinds (the
 * heartbeats, the leader's Lease), each read as its own list.
 */
export class RecordObserver {
  readonly #now: () => number;
  readonly #kinds = new Map<string, Kind>();

  /** @param now the reader's clock. @default monotonicNow */
  constructor(now: () => number = monotonicNow) {
    this.#now = now;
  }

  /** @returns the reader's clock now (ms) */
  now(): number {
    return this.#now();
  }

  #kind(kind: string): Kind {
    let k = this.#kinds.get(kind);
    if (!k) {
      k = { seen: new Map(), baselineMs: undefined };
      this.#kinds.set(kind, k);
    }
    return k;
  }

  /**
   * Notes what one read of a kind of record returned.
   * @param kind which list, e.g. `heartbeats`
   * @param records each record as read
   * @param complete the read returned every record of that kind there is (a full list, a synced
   *   cache): records it lacks are forgotten, and from the first complete read on, a record never
   *   seen before was written while this reader watched
   */
  see(kind: string, records: Iterable<RecordVersion>, complete: boolean): void {
    const now = this.#now();
    const k = this.#kind(kind);
    const present = new Set<string>();
    for (const record of records) {
      present.add(record.id);
      const seen = k.seen.get(record.id);
      if (seen === undefined) {
        const changedMs = k.baselineMs === undefined ? undefined : now;
        k.seen.set(record.id, {
          key: record.key,
          firstSeenMs: now,
          changedMs,
          members: new Map([...record.members ?? []].map((m) => [m, changedMs])),
        });
      } else if (seen.key !== record.key) {
        seen.key = record.key;
        seen.changedMs = now;
        const members = new Map<string, number | undefined>();
        for (const m of record.members ?? []) {
          members.set(m, seen.members.has(m) ? seen.members.get(m) : now);
        }
        seen.members = members;
      }
    }
    if (!complete) return;
    for (const id of [...k.seen.keys()]) if (!present.has(id)) k.seen.delete(id);
    k.baselineMs ??= now;
  }

  /**
   * @param kind which list
   * @returns how long this reader has watched it: ms since its first complete read (0 before)
   */
  watchedMs(kind: string): number {
    const baseline = this.#kinds.get(kind)?.baselineMs;
    return baseline === undefined ? 0 : Math.max(0, this.#now() - baseline);
  }

  /**
   * Judges one record now.
   * @param kind which list
   * @param id the record's id, as given to `see`
   * @param durationMs how long the record stays valid after a change (its lease duration)
   * @returns the observation; a record never seen is unobserved, 0 ms old
   */
  judge(kind: string, id: string, durationMs: number): Observation {
    const now = this.#now();
    const seen = this.#kinds.get(kind)?.seen.get(id);
    if (seen === undefined) {
      return {
        freshness: "unobserved",
        ageMs: 0,
        changeSeen: false,
        changedAtMs: undefined,
        memberSince: NO_MEMBERS,
      };
    }
    const memberSince = new Map<string, number>();
    for (const [m, since] of seen.members) if (since !== undefined) memberSince.set(m, since);
    if (seen.changedMs !== undefined) {
      const ageMs = Math.max(0, now - seen.changedMs);
      return {
        freshness: ageMs <= durationMs ? "fresh" : "silent",
        ageMs,
        changeSeen: true,
        changedAtMs: seen.changedMs,
        memberSince,
      };
    }
    const ageMs = Math.max(0, now - seen.firstSeenMs);
    return {
      freshness: ageMs > durationMs ? "silent" : "unobserved",
      ageMs,
      changeSeen: false,
      changedAtMs: undefined,
      memberSince,
    };
  }
}
