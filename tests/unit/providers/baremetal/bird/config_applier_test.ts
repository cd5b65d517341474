import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { BirdApplier } from "../../../../../providers/baremetal/bird/config_applier.ts";
import { fakeBird } from "./_fake_bird.ts";

const GOOD = "router id 10.0.0.11;\nprotocol device {\n}\n";

// a stand-in for `bird -p -c` (tests/integration/bird_accepts_test.ts runs the real one): rejects
// a file with an unbalanced quote as BIRD does, with rc 1 and a syntax error
const CHECK = [
  "sh",
  "-c",
  'if grep -q \'"a"b"\' "$0"; then echo "$0:4:27 syntax error, unexpected CF_SYM_UNDEFINED" >&2; exit 1; fi',
];

async function withApplier(
  fn: (applier: BirdApplier, file: string, commands: string[], registry: Registry) => Promise<void>,
) {
  const dir = await Deno.makeTempDir();
  const bird = fakeBird(dir, {
    "configure": "0002-Reading configuration from x\n0003 Reconfigured\n",
  });
  const registry = new Registry();
  const file = `${dir}/etc/keelson.conf`;
  try {
    await fn(
      new BirdApplier({ configFile: file, socket: bird.path, registry, checkCommand: CHECK }),
      file,
      bird.commands,
      registry,
    );
  } finally {
    await bird.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("BirdApplier checks with its check command, writes and configures only when the bytes change", async () => {
  await withApplier(async (applier, file, commands, registry) => {
    const first = await applier.apply(GOOD);
    assert.equal(first.result, "success", first.message);
    assert.equal(await Deno.readTextFile(file), GOOD);
    assert.equal((await Deno.stat(file)).mode! & 0o777 & ~0o022, 0o640 & ~0o022);
    const again = await applier.apply(GOOD);
    assert.equal(again.result, "unchanged");
    assert.deepEqual(commands, ["configure"]);
    const metrics = await registry.getSingleMetricAsString("keelson_bgp_configure_total");
    assert.match(metrics, /result="success"} 1/);
    assert.match(metrics, /result="unchanged"} 1/);
  });
});

Deno.test("BirdApplier keeps the file in force when the check rejects the text", async () => {
  await withApplier(async (applier, file, commands, registry) => {
    await applier.apply(GOOD);
    const bad = await applier.apply(GOOD + 'protocol bgp x { password "a"b"; }\n');
    assert.equal(bad.result, "invalid");
    assert.ok(bad.checkOutput?.some((l) => /syntax error/.test(l)), bad.message);
    assert.equal(await Deno.readTextFile(file), GOOD);
    assert.deepEqual(commands, ["configure"]);
    const last = await registry.getSingleMetricAsString("keelson_bgp_last_configure_success");
    assert.match(last, / 0$/m);
    const dirEntries = [...Deno.readDirSync(file.replace(/\/[^/]+$/, ""))].map((e) => e.name);
    assert.deepEqual(dirEntries, ["keelson.conf"], "no temp file left behind");
  });
});

Deno.test("BirdApplier configures again after BIRD was unreachable, though the file is unchanged", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const registry = new Registry();
    const file = `${dir}/keelson.conf`;
    const socket = `${dir}/bird.ctl`;
    const applier = new BirdApplier({ configFile: file, socket, registry, checkCommand: CHECK });
    const down = await applier.apply(GOOD);
    assert.equal(down.result, "error");
    assert.match(down.message, /reads the file when it starts/);
    assert.equal(await Deno.readTextFile(file), GOOD);
    const bird = fakeBird(dir, { "configure": "0003 Reconfigured\n" });
    try {
      const up = await applier.apply(GOOD);
      assert.equal(up.result, "success");
      assert.deepEqual(bird.commands, ["configure"]);
    } finally {
      await bird.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("BirdApplier coalesces a burst of applies to the latest text", async () => {
  await withApplier(async (applier, file, commands) => {
    const texts = [1, 2, 3, 4].map((i) => `router id 10.0.0.${i};\nprotocol device {\n}\n`);
    const results = await Promise.all(texts.map((t) => applier.apply(t)));
    assert.ok(results.every((r) => r.result === "success"));
    assert.equal(await Deno.readTextFile(file), texts[3]);
    assert.ok(commands.length <= 2, `configured ${commands.length} times`);
  });
});
