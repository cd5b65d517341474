/**
 * The importer's shape: sources are read, the inventory is decided as fragments with their notes
 * (`src/import/inventory_fragments.ts`), and one writer (`src/import/inventory_writer.ts`) makes
 * the text. So no importer writes TOML text of its own, none decides from its own output (the
 * final `keelson check` validation runs in the command, after the decisions), and a CIDR's
 * network is computed in one place, `parseRange` in src/net/ip.ts.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { typescriptFiles } from "../../_support/typescript_files.ts";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

/** The files allowed to build TOML text: the line builder and the one writer. */
const TOML_TEXT_HOME = ["src/import/toml_text.ts", "src/import/inventory_writer.ts"];

/** Files that shift host bits for another reason than parsing a CIDR, and why. */
const MASKS_ELSEWHERE: Readonly<Record<string, string>> = {
  "src/net/ip.ts": "parseRange: the one CIDR reader",
  "providers/baremetal/bird/render.ts": "checks a prefix its own model built before writing it",
};

/** A CIDR's network computed by shifting the host bits out and back. */
const NETWORK_BY_SHIFT_REGEXP = /\(\s*[\w.]+\s*>>\s*(\w+)\s*\)\s*<<\s*\1\b/g;

/** A file's code without its comments. */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
}

/**
 * What breaks the importer's shape in one file.
 * @param path the file, relative to the repository
 * @param text its text
 * @returns one line per finding
 */
export function shapeFindings(path: string, text: string): string[] {
  const body = code(text);
  const findings: string[] = [];
  if (!TOML_TEXT_HOME.includes(path) && /\bTomlLines\b|\btomlValue\(|\btomlKey\(/.test(body)) {
    findings.push(`${path}: builds TOML text (decide fragments; inventory_writer.ts writes)`);
  }
  if (
    path.startsWith("src/import/") && path !== "src/import/check_output.ts" &&
    /check_output\.ts|parse_config\.ts/.test(body)
  ) {
    findings.push(`${path}: reads an inventory back (the command validates the written text)`);
  }
  if (!(path in MASKS_ELSEWHERE) && NETWORK_BY_SHIFT_REGEXP.test(body)) {
    findings.push(`${path}: computes a CIDR's network itself (use parseRange)`);
  }
  NETWORK_BY_SHIFT_REGEXP.lastIndex = 0;
  return findings;
}

Deno.test("shapeFindings() sees TOML text, a read-back and a CIDR mask outside their homes", () => {
  const text = [
    'import { TomlLines } from "./toml_text.ts";',
    'import { inventoryIssues } from "./check_output.ts";',
    "const first = (ip.value >> host) << host;",
    "// TomlLines in a comment is no use",
  ].join("\n");
  assert.equal(shapeFindings("src/import/metallb.ts", text).length, 3);
  assert.equal(shapeFindings("src/import/inventory_writer.ts", text).length, 2);
  assert.deepEqual(shapeFindings("src/net/ip.ts", "const f = (v >> bits) << bits;"), []);
  assert.deepEqual(shapeFindings("src/cli/import.ts", 'import "../import/check_output.ts";'), []);
});

Deno.test("src/ and providers/ write imported inventories through one writer and parse CIDRs in src/net", async () => {
  const findings: string[] = [];
  let files = 0;
  for (const dir of ["src", "providers"]) {
    for await (const path of typescriptFiles(dir, ROOT)) {
      files++;
      findings.push(...shapeFindings(path, await Deno.readTextFile(`${ROOT}${path}`)));
    }
  }
  assert.ok(files > 150, `read ${files} files; the walk found too few`);
  assert.deepEqual(findings, [], findings.join("\n"));
});
