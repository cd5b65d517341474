import assert from "node:assert/strict";
import { compareCodeUnits } from "../../../src/text/code_unit_order.ts";

Deno.test("compareCodeUnits orders by UTF-16 code units, whatever the locale", () => {
  assert.deepEqual(["b", "B", "a", "a-2", "a-10", "ä"].sort(compareCodeUnits), [
    "B",
    "a",
    "a-10",
    "a-2",
    "b",
    "ä",
  ]);
  assert.equal(compareCodeUnits("x", "x"), 0);
  assert.ok(compareCodeUnits("10.0.0.1", "10.0.0.2") < 0);
  assert.ok(compareCodeUnits("z", "a") > 0);
});

Deno.test("the agent's code never sorts with localeCompare (it would load ICU's collation data)", async () => {
  const offenders: string[] = [];
  for (const top of ["src", "providers"]) {
    const root = new URL(`../../../${top}/`, import.meta.url);
    const walk = async (dir: URL, rel: string): Promise<void> => {
      for await (const entry of Deno.readDir(dir)) {
        if (entry.isDirectory) await walk(new URL(`${entry.name}/`, dir), `${rel}${entry.name}/`);
        else if (entry.name.endsWith(".ts")) {
          const text = await Deno.readTextFile(new URL(entry.name, dir));
          if (/\.localeCompare\(/.test(text)) offenders.push(`${rel}${entry.name}`);
        }
      }
    };
    await walk(root, `${top}/`);
  }
  assert.deepEqual(offenders, []);
});
