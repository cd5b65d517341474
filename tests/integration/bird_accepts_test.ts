/**
 * BIRD itself accepts what Keelson renders: every golden file of the BIRD renderer
 * (tests/unit/providers/baremetal/bird/testdata/*.conf, compared byte for byte by the unit tests)
 * passes `bird -p`, and `BirdApplier` with its default check command (`bird -p -c`) refuses a
 * file BIRD cannot parse. BIRD is required (tests/_support/tools.ts): missing, these fail.
 *
 * @module
 */
import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { BirdApplier } from "../../providers/baremetal/bird/config_applier.ts";
import { birdParse, requireTool } from "../_support/tools.ts";

const GOLDEN = new URL("../unit/providers/baremetal/bird/testdata/", import.meta.url);

Deno.test("bird -p accepts every golden file of the BIRD renderer", async () => {
  const names = [...Deno.readDirSync(GOLDEN)].filter((e) => e.name.endsWith(".conf"))
    .map((e) => e.name).sort();
  assert.ok(names.length >= 10, `found the golden files (${names.join(", ")})`);
  for (const name of names) {
    const parsed = await birdParse(await Deno.readTextFile(new URL(name, GOLDEN)));
    assert.equal(parsed.code, 0, `bird -p refused ${name}:\n${parsed.output}`);
  }
});

Deno.test("BirdApplier's default check (bird -p -c) refuses a file BIRD cannot parse and keeps the one in force", async () => {
  requireTool("bird");
  const dir = await Deno.makeTempDir({ prefix: "keelson-bird-accepts-" });
  try {
    const file = `${dir}/keelson.conf`;
    const good = await Deno.readTextFile(new URL("cp-1.conf", GOLDEN));
    // no control socket: the good file is written (BIRD reads it when it starts), not configured
    const applier = new BirdApplier({
      configFile: file,
      socket: `${dir}/none.ctl`,
      registry: new Registry(),
    });
    assert.equal((await applier.apply(good)).result, "error");
    assert.equal(await Deno.readTextFile(file), good);
    const bad = await applier.apply(good + 'protocol bgp x { password "a"b"; }\n');
    assert.equal(bad.result, "invalid", bad.message);
    assert.ok(bad.checkOutput?.some((l) => /syntax error/.test(l)), bad.message);
    assert.equal(await Deno.readTextFile(file), good);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
