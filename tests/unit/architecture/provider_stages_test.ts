/**
 * Guards of the provider's lifecycle stages: the registry entry and the announcers' sides hold no cell
 * that a later hook fills in (each stage is built whole, `lifecycle_stage.ts`), and the registry
 * entry reaches BIRD's routes only through its route hooks.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

/** A file's code, comments stripped. */
async function code(path: string): Promise<string> {
  const text = await Deno.readTextFile(`${ROOT}${path}`);
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
}

/** A declaration waiting to be filled in: `let x: T | undefined` or `let x;`. */
const LATE_CELL_REGEXP = /\blet \w+(?:: [^=;]*\bundefined\b[^=;]*)?;/;

Deno.test("the registry entry and the BIRD side declare no cell a later hook fills in", async () => {
  for (
    const path of [
      "providers/baremetal/mod.ts",
      "providers/baremetal/bird/start_bird.ts",
      "providers/baremetal/keepalived/start_keepalived.ts",
    ]
  ) {
    const text = await code(path);
    assert.ok(text.includes("LifecycleStage"), `${path} holds its stages whole`);
    assert.doesNotMatch(text, LATE_CELL_REGEXP, path);
    assert.doesNotMatch(text, /Ready = (true|false)/, `${path}: no flag guarding a later name`);
  }
});

Deno.test("the registry entry reaches BIRD only through its route hooks", async () => {
  const text = await code("providers/baremetal/mod.ts");
  const bird = [...text.matchAll(/from "\.\/bird\/([^"]+)"/g)].map((m) => m[1]);
  assert.deepEqual(bird, ["pod_route_hooks.ts"]);
});
