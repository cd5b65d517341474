/**
 * The stored form of the action record: one annotation on the leader Lease holding, per kind,
 * the recent actions as `{"node": name, "at": RFC 3339}`, folded ones as `{"count": n, "at": ...}`,
 * and `{"all": true, "at": ...}` for "unaccounted for: every slot taken". Read from the API, so
 * parsed strictly (size, shape, names, times) on one path; anything else is no record at all.
 *
 * @module
 */
import { ACTION_KINDS, type ActionKind } from "./decide_action_slot.ts";

/** The annotation on the leader Lease that holds the record. */
export const ACTION_LEDGER_ANNOTATION = "keelson.io/power-action-ledger";

/** The largest record read (bytes of the annotation's value). */
export const MAX_LEDGER_BYTES = 64 * 1024;

/** At most this many entries per kind are stored; older ones are folded into one. */
export const MAX_STORED_ACTIONS = 64;

/** One stored action (or several folded, or unaccounted ones). */
export interface StoredAction {
  /** The Node acted on; undefined for folded or unaccounted actions. */
  target?: string;
  /** The writer's time, RFC 3339. */
  at: string;
  /** How many actions; `Infinity` for unaccounted ones. */
  count: number;
}

/** The record: the stored actions of each kind. */
export type StoredLedger = Record<ActionKind, StoredAction[]>;

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;
// a Node name is a DNS subdomain
const NODE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const MAX_COUNT = 1_000_000;

/**
 * What identifies one stored action within its kind (the same action read twice has one key).
 * @param action the action
 * @returns its key
 */
export function actionKey(action: StoredAction): string {
  return `${action.target ?? ""}|${action.at}|${action.count}`;
}

/**
 * An empty record.
 * @returns no actions of any kind
 */
export function emptyLedger(): StoredLedger {
  return { taint: [], fence: [], delete: [] };
}

/**
 * Parses the annotation's value.
 * @param text the value
 * @returns the record, or why it is not one
 */
export function parseLedger(text: string): { ok: true; ledger: StoredLedger } | {
  ok: false;
  reason: string;
} {
  if (text.length > MAX_LEDGER_BYTES) {
    return { ok: false, reason: `it is longer than ${MAX_LEDGER_BYTES} bytes` };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, reason: "it is not JSON" };
  }
  if (!isObject(value) || value.v !== 1) {
    return { ok: false, reason: 'it is not an object with "v": 1' };
  }
  const ledger = emptyLedger();
  for (const kind of ACTION_KINDS) {
    const entries = value[kind];
    if (entries === undefined) continue;
    if (!Array.isArray(entries) || entries.length > MAX_STORED_ACTIONS) {
      return { ok: false, reason: `"${kind}" is not a list of at most ${MAX_STORED_ACTIONS}` };
    }
    for (const [index, entry] of entries.entries()) {
      const action = parseAction(entry);
      if (!action) return { ok: false, reason: `"${kind}"[${index}] is not an action` };
      ledger[kind].push(action);
    }
  }
  return { ok: true, ledger };
}

function parseAction(entry: unknown): StoredAction | undefined {
  if (!isObject(entry)) return undefined;
  const { at, node, count, all } = entry;
  if (typeof at !== "string" || !RFC3339.test(at) || !Number.isFinite(Date.parse(at))) {
    return undefined;
  }
  const keys = Object.keys(entry).length;
  if (typeof node === "string" && keys === 2) {
    return node.length <= 253 && NODE_NAME.test(node) ? { target: node, at, count: 1 } : undefined;
  }
  if (typeof count === "number" && keys === 2) {
    return Number.isInteger(count) && count >= 1 && count <= MAX_COUNT ? { at, count } : undefined;
  }
  if (all === true && keys === 2) return { at, count: Infinity };
  return undefined;
}

/**
 * The annotation's value for a record.
 * @param ledger the record (at most `MAX_STORED_ACTIONS` per kind: fold first)
 * @returns compact JSON
 */
export function formatLedger(ledger: StoredLedger): string {
  const out: Record<string, unknown> = { v: 1 };
  for (const kind of ACTION_KINDS) {
    out[kind] = ledger[kind].map((a) =>
      a.count === Infinity
        ? { all: true, at: a.at }
        : a.target !== undefined && a.count === 1
        ? { node: a.target, at: a.at }
        : { count: Math.min(a.count, MAX_COUNT), at: a.at }
    );
  }
  return JSON.stringify(out);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
