/**
 * A controller keeps what it remembers of each object in one record per object, in one Map (or
 * derives it from the API): parallel tables keyed by the same name can disagree, and one left
 * behind when the object goes is a leak. Read from the controllers' text.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { typescriptFiles } from "../../_support/typescript_files.ts";

const CONTROLLERS = fileURLToPath(new URL("../../../src/controllers", import.meta.url));

/** A class field that is a Map or a Set (`#x = new Map…`, `#x: Map<…>`), its comments stripped. */
const KEYED_FIELD =
  /^\s*(?:readonly\s+)?#\w+\s*(?::\s*(?:Readonly)?(?:Map|Set)<[^;\n]*|(?::[^=;\n]*)?=\s*new (?:Map|Set)\b)/gm;

Deno.test("every controller class keeps its per-object state in at most one Map", async () => {
  const found = new Map<string, number>();
  for await (const path of typescriptFiles(CONTROLLERS)) {
    if (!path.endsWith("_controller.ts")) continue;
    const text = (await Deno.readTextFile(path)).replace(/\/\*[\s\S]*?\*\//g, "");
    found.set(path.slice(CONTROLLERS.length + 1), text.match(KEYED_FIELD)?.length ?? 0);
  }
  // the guard reads the files it means to
  assert.ok(found.has("out_of_service/out_of_service_controller.ts"), [...found.keys()].join());
  assert.ok(found.size >= 7, `${found.size} controllers read`);
  // and sees a Map field where one is (the Service controller's memory of each Service)
  assert.equal(found.get("service/service_controller.ts"), 1);
  const beyond = [...found].filter(([, n]) => n > 1).map(([p, n]) => `${p}: ${n}`);
  assert.deepEqual(beyond, []);
});
