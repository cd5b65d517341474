/**
 * What an importer decided, before any text: the fragments of a Keelson inventory (settings
 * tables, pools, BGP peers, machines), each key with its value, and the notes beside them — what
 * the source said that the inventory cannot, why, and what to do instead. The notes are part of
 * the model, so a decision and the words that explain it are made in one place; one writer
 * (`inventory_writer.ts`) turns the model into TOML for every importer. Pure data.
 *
 * @module
 */
import type { TomlValue } from "./toml_text.ts";

/**
 * A comment of the inventory: one sentence or more (wrapped, control characters escaped), then
 * optional lines written as they are, commented-out keys or commands the operator may take
 * (`# interface = "eth0"`, `#   kubectl get …`).
 */
export interface Note {
  readonly text: string;
  /** Lines that follow the comment verbatim: commented-out keys or commands (or empty). */
  readonly lines?: readonly string[];
}

/** One key of a table, or a note between its keys. */
export type Entry =
  | { readonly key: string; readonly value: TomlValue }
  | { readonly note: Note };

/** A table of the inventory: `[keepalived]`, `[bgp]`, `[[bgp.peers]]`, `[[machines]]`, … */
export interface TableFragment {
  /** The header as written, e.g. `[[bgp.peers]]`. */
  readonly header: string;
  /** Notes above the keys; they stay comments when the table is left out. */
  readonly notes: readonly Note[];
  /** The keys, with notes between them, in the order written. */
  readonly entries: readonly Entry[];
  /**
   * Why the table cannot be in force as imported (a value only the operator knows): the table is
   * then written commented out, after this note. Undefined: in force.
   */
  readonly leftOut?: Note;
}

/** A `[pools.served_by]` value: every key given must hold for a machine to serve. */
export interface ServedByKeys {
  readonly machines?: readonly string[];
  readonly roles?: readonly ("control-plane" | "worker")[];
  readonly labels?: Readonly<Record<string, string>>;
}

/**
 * The machines that serve a pool's addresses: Keelson's default, every control-plane machine
 * (keepalived holds a VRRP pool's addresses on them; every one that peers announces a BGP
 * pool's), or the machines a `[pools.served_by]` selects (a source's node selectors, translated),
 * with the note that says where it came from and the labels the imported machines must carry for
 * it to select them. A choice the inventory cannot say stays a note of the pool.
 */
export type ServingMachines =
  | { readonly every: "control-plane" }
  | {
    readonly servedBy: ServedByKeys;
    /** Where the selection came from, written above its keys. */
    readonly note: Note;
    /** Labels to write on imported machines (by name) so that `servedBy.labels` selects them. */
    readonly machineLabels: ReadonlyMap<string, Readonly<Record<string, string>>>;
  };

/** One `[[pools]]` entry. */
export interface PoolFragment extends TableFragment {
  readonly header: "[[pools]]";
  /** The pool's name (also among `entries`). */
  readonly name: string;
  /** Which machines serve its addresses. */
  readonly servingMachines: ServingMachines;
  /** Its `[pools.service_allocation]`, when the source restricted who may use it. */
  readonly serviceAllocation?: TableFragment;
}

/** Notes on their own, between tables. */
export interface NoteBlock {
  readonly notes: readonly Note[];
  /** Whether an empty line separates them from what comes before. */
  readonly blankBefore: boolean;
}

/** What stands between the header and the machines, in order. */
export type Block = TableFragment | NoteBlock;

/** A whole imported inventory. */
export interface InventoryFragments {
  /** Where the inventory came from, what to review, what was not read. */
  readonly header: readonly Note[];
  /** `[load_balancer]`, `[keepalived]`, `[bgp]` and its peers, and notes between them. */
  readonly settings: readonly Block[];
  /** The pools, and notes between them (a source entry that became no pool says why). */
  readonly pools: readonly (PoolFragment | NoteBlock)[];
  /** The `[[machines]]`, or the note saying how to add them. */
  readonly machines: readonly Block[];
}

/**
 * A key entry.
 * @param key the key
 * @param value its value
 * @returns the entry
 */
export function keyEntry(key: string, value: TomlValue): Entry {
  return { key, value };
}

/**
 * A note entry.
 * @param text the comment
 * @param lines lines that follow it verbatim
 * @returns the entry
 */
export function noteEntry(text: string, ...lines: string[]): Entry {
  return { note: lines.length > 0 ? { text, lines } : { text } };
}

/**
 * Whether a block is a table.
 * @param block a block
 * @returns true for a table
 */
export function isTable(block: Block): block is TableFragment {
  return "header" in block;
}
