/**
 * The one writer of imported inventories: the fragments an importer decided
 * (`inventory_fragments.ts`) as TOML text, keys as values (`toml_text.ts`), notes as comments.
 * A table left out is written commented out under the note saying why. Pure.
 *
 * @module
 */
import {
  type Block,
  type Entry,
  type InventoryFragments,
  isTable,
  type Note,
  type NoteBlock,
  type PoolFragment,
  type ServedByKeys,
  type TableFragment,
} from "./inventory_fragments.ts";
import { TomlLines } from "./toml_text.ts";

/**
 * Writes an imported inventory.
 * @param inventory the fragments, in order
 * @returns the TOML text, ending in one newline
 */
export function writeInventory(inventory: InventoryFragments): string {
  const out = new TomlLines();
  for (const note of inventory.header) writeNote(out, note);
  for (const block of inventory.settings) writeBlock(out, block);
  for (const block of inventory.pools) {
    writeBlock(out, block);
    if (isPool(block) && "servedBy" in block.servingMachines) {
      writeServedBy(out, block.servingMachines.servedBy, block.servingMachines.note);
    }
    if (isPool(block) && block.serviceAllocation) writeTable(out, block.serviceAllocation);
  }
  for (const block of inventory.machines) writeBlock(out, block);
  return out.text();
}

function isPool(block: PoolFragment | NoteBlock): block is PoolFragment {
  return "header" in block;
}

/** `[pools.served_by]`, after its pool's keys: the machines the pool's selection names. */
function writeServedBy(out: TomlLines, servedBy: ServedByKeys, note: Note): void {
  out.table("[pools.served_by]");
  writeNote(out, note);
  if (servedBy.machines !== undefined) out.set("machines", servedBy.machines);
  if (servedBy.roles !== undefined) out.set("roles", servedBy.roles);
  if (servedBy.labels !== undefined) out.set("labels", servedBy.labels);
}

function writeBlock(out: TomlLines, block: Block): void {
  if (isTable(block)) {
    writeTable(out, block);
    return;
  }
  if (block.blankBefore) out.blank();
  for (const note of block.notes) writeNote(out, note);
}

function writeTable(out: TomlLines, table: TableFragment): void {
  if (table.leftOut === undefined) {
    out.table(table.header);
    for (const note of table.notes) writeNote(out, note);
    for (const entry of table.entries) writeEntry(out, entry);
    return;
  }
  out.blank();
  for (const note of table.notes) writeNote(out, note);
  writeNote(out, table.leftOut);
  const body = new TomlLines();
  for (const entry of table.entries) writeEntry(body, entry);
  out.raw(`# ${table.header}`, ...body.text().trimEnd().split("\n").map((l) => `# ${l}`));
}

function writeEntry(out: TomlLines, entry: Entry): void {
  if ("note" in entry) writeNote(out, entry.note);
  else out.set(entry.key, entry.value);
}

function writeNote(out: TomlLines, note: Note): void {
  out.comment(note.text);
  if (note.lines) out.raw(...note.lines);
}
