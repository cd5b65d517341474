/**
 * docs/inventory.md's key reference is the schema's: every key of src/config/schema.ts has a
 * meaning and an example in scripts/inventory_reference.ts, no note names a key the schema lacks,
 * and the doc holds exactly what the script generates (formatted as `deno fmt` formats it).
 */
import assert from "node:assert/strict";
import {
  BEGIN,
  END,
  KEY_NOTES,
  renderReference,
  schemaKeys,
  withReference,
} from "../../../scripts/inventory_reference.ts";

const ROOT = new URL("../../../", import.meta.url);
const read = (path: string) => Deno.readTextFile(new URL(path, ROOT));

/** Markdown as `deno fmt` writes it. */
async function formatted(markdown: string): Promise<string> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["fmt", "--ext", "md", "-"],
    cwd: ROOT,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(markdown));
  await writer.close();
  const out = await child.output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  return new TextDecoder().decode(out.stdout);
}

Deno.test("every inventory key has a note, and every note a key", () => {
  const keys = schemaKeys().map((row) => row.path);
  assert.ok(keys.length > 100, `the schema has ${keys.length} keys`);
  assert.deepEqual(
    keys.filter((key) => !(key in KEY_NOTES)),
    [],
    "keys without a meaning in scripts/inventory_reference.ts KEY_NOTES",
  );
  assert.deepEqual(
    Object.keys(KEY_NOTES).filter((key) => !keys.includes(key)),
    [],
    "KEY_NOTES entries for keys the schema does not have",
  );
});

Deno.test("every key in the reference has a type, a default column and an example", async () => {
  const reference = renderReference(await read("deploy/examples/keelson.toml"));
  const rows = reference.split("\n").filter((line) => /^\| `/.test(line));
  assert.equal(rows.length, schemaKeys().length);
  for (const row of rows) {
    const cells = row.split(/(?<!\\)\|/).slice(1, -1).map((cell) => cell.trim());
    assert.equal(cells.length, 6, row);
    assert.notEqual(cells[1], "any", `a key of unknown type: ${row}`);
    assert.notEqual(cells[3], "—", `a key without an example: ${row}`);
    assert.notEqual(cells[5], "", `a key without a meaning: ${row}`);
  }
});

Deno.test("docs/inventory.md holds the reference generated from the schema", async () => {
  const doc = await read("docs/inventory.md");
  assert.ok(doc.includes(BEGIN) && doc.includes(END), "the generated section's markers");
  const fresh = await formatted(withReference(doc, await read("deploy/examples/keelson.toml")));
  assert.equal(
    doc,
    fresh,
    "docs/inventory.md differs from the schema: run " +
      "`deno run -A scripts/inventory_reference.ts && deno fmt docs/inventory.md`",
  );
});

Deno.test("the reference names a key the schema gains (the check can fail)", async () => {
  const doc = await read("docs/inventory.md");
  const withExtra = doc.replace("| `asn`", "| `asn_typo`");
  assert.notEqual(withExtra, doc);
  const fresh = await formatted(
    withReference(withExtra, await read("deploy/examples/keelson.toml")),
  );
  assert.notEqual(withExtra, fresh);
});
