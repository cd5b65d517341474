/**
 * client-node is used for its types only: loading its runtime costs a Deno process about 85 MB of
 * RSS and most of a second of start-up (see src/kube/rest_api.ts). This guard fails on any import
 * or re-export of it from the program's code that is not `import type` / `export type`.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { typescriptFiles } from "../../_support/typescript_files.ts";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

/** Every `import … from`/`export … from` statement naming client-node, with its text. */
function clientNodeStatements(text: string): string[] {
  const statements = text.match(
    /^\s*(?:import|export)\b[^;]*?\bfrom\s*["']@kubernetes\/client-node[^"']*["']/gms,
  ) ?? [];
  const bare = text.match(/^\s*import\s*["']@kubernetes\/client-node[^"']*["']/gm) ?? [];
  const dynamic = text.match(/\bimport\(\s*["']@kubernetes\/client-node[^"']*["']\s*\)/g) ?? [];
  return [...statements, ...bare, ...dynamic].map((s) => s.trim());
}

Deno.test("src/, providers/ and main.ts import only client-node's types", async () => {
  const offenders: string[] = [];
  let typeImports = 0;
  const files = [`${ROOT}main.ts`];
  for (const dir of ["src", "providers"]) {
    for await (const file of typescriptFiles(`${ROOT}${dir}`)) files.push(file);
  }
  for (const file of files) {
    for (const statement of clientNodeStatements(await Deno.readTextFile(file))) {
      if (/^(?:import|export)\s+type\s/.test(statement)) typeImports++;
      else offenders.push(`${file.slice(ROOT.length)}: ${statement.split("\n")[0]}`);
    }
  }
  assert.deepEqual(offenders, [], "use `import type` for client-node (its runtime is not loaded)");
  assert.ok(typeImports > 10, `the scan found the type imports (${typeImports})`);
});

Deno.test("the guard's scanner sees value, namespace, side-effect and dynamic imports", () => {
  const found = clientNodeStatements(`
import { V1MicroTime } from "@kubernetes/client-node";
import type { V1Node } from "@kubernetes/client-node";
import {
  type V1Pod,
  CoreV1Api,
} from "@kubernetes/client-node";
import * as k8s from "@kubernetes/client-node/dist/gen/models/ObjectSerializer.js";
export { V1Service } from "@kubernetes/client-node";
import "@kubernetes/client-node";
const lazy = await import("@kubernetes/client-node");
`);
  assert.equal(found.length, 7);
  assert.equal(found.filter((s) => /^(?:import|export)\s+type\s/.test(s)).length, 1);
});
