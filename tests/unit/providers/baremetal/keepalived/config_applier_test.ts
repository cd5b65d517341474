import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { KeepalivedApplier } from "../../../../../providers/baremetal/keepalived/config_applier.ts";
import { FakeClock } from "../../../_fakes/fake_clock.ts";

// a stand-in for `keepalived -t -f`: rejects a file containing "bogus" with rc 5 and a message
const CHECK = [
  "sh",
  "-c",
  'if grep -q bogus "$0"; then echo "Unknown keyword bogus" >&2; exit 5; fi',
];

async function setup(extra: { pid?: string } = {}) {
  const dir = await Deno.makeTempDir({ prefix: "keelson-applier-" });
  const registry = new Registry();
  const clock = new FakeClock();
  const pidFile = `${dir}/keepalived.pid`;
  if (extra.pid) await Deno.writeTextFile(pidFile, extra.pid);
  const applier = new KeepalivedApplier({
    configFile: `${dir}/conf.d/keelson.conf`,
    checkCommand: CHECK,
    pidFile,
    debounceMs: 100,
    registry,
    clock,
    processName: "sh",
  });
  const apply = async (text: string) => {
    const result = applier.apply(text);
    clock.advance(100);
    return await result;
  };
  const metric = async (result: string) =>
    (await registry.getSingleMetric("keelson_keepalived_reloads_total")!.get()).values
      .find((v) => v.labels.result === result)?.value ?? 0;
  return { dir, applier, apply, clock, metric, file: `${dir}/conf.d/keelson.conf`, pidFile };
}

Deno.test("KeepalivedApplier.apply() writes a valid file and skips unchanged text", async () => {
  const t = await setup();
  try {
    const first = await t.apply("vrrp_instance a {}\n");
    assert.equal(first.result, "success");
    assert.equal(first.reloaded, false); // no pid file: written, keepalived reads it on start
    assert.match(first.message, /pid file .* does not exist/);
    assert.equal(await Deno.readTextFile(t.file), "vrrp_instance a {}\n");
    assert.equal((await t.apply("vrrp_instance a {}\n")).result, "unchanged");
    assert.equal(await t.metric("success"), 1);
    assert.equal(await t.metric("unchanged"), 1);
    assert.deepEqual([...Deno.readDirSync(`${t.dir}/conf.d`)].map((e) => e.name), ["keelson.conf"]);
  } finally {
    await Deno.remove(t.dir, { recursive: true });
  }
});

Deno.test("KeepalivedApplier.apply() keeps the old file when the check rejects the text", async () => {
  const t = await setup();
  try {
    await t.apply("good\n");
    const result = await t.apply("bogus\n");
    assert.equal(result.result, "invalid");
    assert.deepEqual(result.checkOutput, ["Unknown keyword bogus"]);
    assert.equal(await Deno.readTextFile(t.file), "good\n");
    assert.equal(await t.metric("invalid"), 1);
    assert.deepEqual([...Deno.readDirSync(`${t.dir}/conf.d`)].map((e) => e.name), ["keelson.conf"]);
  } finally {
    await Deno.remove(t.dir, { recursive: true });
  }
});

Deno.test("KeepalivedApplier.apply() coalesces a burst to the latest text", async () => {
  const t = await setup();
  try {
    const results = ["one\n", "two\n", "three\n"].map((text) => t.applier.apply(text));
    t.clock.advance(100);
    const settled = await Promise.all(results);
    assert.deepEqual(settled.map((r) => r.result), ["success", "success", "success"]);
    assert.equal(await Deno.readTextFile(t.file), "three\n");
    assert.equal(await t.metric("success"), 1);
  } finally {
    await Deno.remove(t.dir, { recursive: true });
  }
});

Deno.test("KeepalivedApplier.apply() sends SIGHUP to the pid file's process", async () => {
  const dir = await Deno.makeTempDir();
  const marker = `${dir}/hup`;
  const child = new Deno.Command("sh", {
    args: ["-c", `trap 'echo hup > ${marker}' HUP; while :; do sleep 0.05; done`],
    stdout: "null",
    stderr: "null",
  }).spawn();
  const t = await setup({ pid: String(child.pid) });
  try {
    await new Promise((r) => setTimeout(r, 100)); // let sh install its trap
    const result = await t.apply("x\n");
    assert.equal(result.reloaded, true);
    for (let i = 0; i < 100 && !(await Deno.stat(marker).catch(() => false)); i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(await Deno.readTextFile(marker), "hup\n");
  } finally {
    child.kill("SIGKILL");
    await child.status;
    await Deno.remove(t.dir, { recursive: true });
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("KeepalivedApplier.apply() never signals a pid that is not keepalived", async () => {
  const t = await setup({ pid: "1" });
  try {
    const result = await t.apply("x\n");
    assert.equal(result.result, "error");
    assert.equal(result.reloaded, false);
    assert.match(result.message, /not a running keepalived/);
    assert.equal(await Deno.readTextFile(t.file), "x\n");
  } finally {
    await Deno.remove(t.dir, { recursive: true });
  }
});

Deno.test("KeepalivedApplier.apply() reports a check that timed out as an error, not invalid", async () => {
  const dir = await Deno.makeTempDir({ prefix: "keelson-applier-" });
  const registry = new Registry();
  const applier = new KeepalivedApplier({
    configFile: `${dir}/keelson.conf`,
    checkCommand: ["sh", "-c", "exec sleep 5"],
    pidFile: `${dir}/keepalived.pid`,
    debounceMs: 0,
    commandTimeoutMs: 200,
    registry,
  });
  try {
    await Deno.writeTextFile(`${dir}/keelson.conf`, "old\n");
    const result = await applier.apply("new\n");
    assert.equal(result.result, "error");
    assert.match(result.message, /did not finish within 0\.2 s/);
    assert.equal(await Deno.readTextFile(`${dir}/keelson.conf`), "old\n");
  } finally {
    applier.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("KeepalivedApplier.apply() retries the reload of a written file whose reload failed", async () => {
  const dir = await Deno.makeTempDir();
  const marker = `${dir}/hup`;
  const child = new Deno.Command("sh", {
    args: ["-c", `trap 'echo hup >> ${marker}' HUP; while :; do sleep 0.05; done`],
    stdout: "null",
    stderr: "null",
  }).spawn();
  const t = await setup({ pid: "1" }); // not keepalived: written, not reloaded
  try {
    const failed = await t.apply("x\n");
    assert.equal(failed.result, "error");
    assert.equal(await Deno.readTextFile(t.file), "x\n");
    // the pid file names the running daemon again: the same text is reloaded, not "unchanged"
    await Deno.writeTextFile(t.pidFile, String(child.pid));
    await new Promise((r) => setTimeout(r, 100)); // let sh install its trap
    const retried = await t.apply("x\n");
    assert.deepEqual([retried.result, retried.reloaded], ["success", true]);
    for (let i = 0; i < 100 && !(await Deno.stat(marker).catch(() => false)); i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(await Deno.readTextFile(marker), "hup\n");
    // reloaded once: from now on the same text is unchanged
    const again = await t.apply("x\n");
    assert.deepEqual([again.result, again.reloaded], ["unchanged", false]);
  } finally {
    child.kill("SIGKILL");
    await child.status;
    await Deno.remove(t.dir, { recursive: true });
    await Deno.remove(dir, { recursive: true });
  }
});
