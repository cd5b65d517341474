import assert from "node:assert/strict";
import { type LogRecord, reset } from "@logtape/logtape";
import { Registry } from "prom-client";
import { KeepalivedApplier } from "../../../../../providers/baremetal/keepalived/config_applier.ts";
import { FakeClock } from "../../../../unit/_fakes/fake_clock.ts";
import { captureLogs } from "../../../../unit/_fakes/captured_logs.ts";
import { pollUntil } from "../../../../_support/poll.ts";

// a stand-in for `keepalived -t -f`: rejects a file containing "bogus" with rc 5 and a message
const CHECK = [
  "sh",
  "-c",
  'if grep -q bogus "$0"; then echo "Unknown keyword bogus" >&2; exit 5; fi',
];

/**
 * A shell standing in for keelson's daemon, started with `trap` installed: it says so through a
 * file once the trap is set, so a signal sent after this returns meets the trap.
 */
async function trappingShell(trap: string): Promise<Deno.ChildProcess> {
  const dir = await Deno.makeTempDir();
  try {
    const child = new Deno.Command("sh", {
      args: ["-c", `${trap}; : > ${dir}/ready; while :; do sleep 0.05; done`],
      stdout: "null",
      stderr: "null",
    }).spawn();
    await pollUntil(
      "the shell's trap",
      () => Deno.stat(`${dir}/ready`).then(() => true, () => false),
    );
    return child;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

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
    const written = await t.apply("vrrp_instance a {}\n");
    assert.equal(written.result, "not_running"); // no pid file: written, keepalived reads it on start
    assert.equal(await Deno.readTextFile(t.file), "vrrp_instance a {}\n");
    const hup = await trappingShell("trap '' HUP");
    try {
      await Deno.writeTextFile(t.pidFile, String(hup.pid));
      assert.equal((await t.apply("vrrp_instance a {}\n")).result, "success");
      assert.equal((await t.apply("vrrp_instance a {}\n")).result, "unchanged");
    } finally {
      hup.kill("SIGKILL");
      await hup.status;
    }
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
    assert.deepEqual(settled.map((r) => r.result), ["not_running", "not_running", "not_running"]);
    assert.equal(await Deno.readTextFile(t.file), "three\n");
    assert.equal(await t.metric("not_running"), 1);
  } finally {
    await Deno.remove(t.dir, { recursive: true });
  }
});

Deno.test("KeepalivedApplier.apply() sends SIGHUP to the pid file's process", async () => {
  const dir = await Deno.makeTempDir();
  const marker = `${dir}/hup`;
  const child = await trappingShell(`trap 'echo hup > ${marker}' HUP`);
  const t = await setup({ pid: String(child.pid) });
  try {
    const result = await t.apply("x\n");
    assert.equal(result.reloaded, true);
    await pollUntil("the SIGHUP mark", () => Deno.stat(marker).then(() => true, () => false));
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
  const child = await trappingShell(`trap 'echo hup >> ${marker}' HUP`);
  const t = await setup({ pid: "1" }); // not keepalived: written, not reloaded
  try {
    const failed = await t.apply("x\n");
    assert.equal(failed.result, "error");
    assert.equal(await Deno.readTextFile(t.file), "x\n");
    // the pid file names the running daemon again: the same text is reloaded, not "unchanged"
    await Deno.writeTextFile(t.pidFile, String(child.pid));
    const retried = await t.apply("x\n");
    assert.deepEqual([retried.result, retried.reloaded], ["success", true]);
    await pollUntil("the SIGHUP mark", () => Deno.stat(marker).then(() => true, () => false));
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

function text(record: LogRecord): string {
  return record.message.map((part) => String(part)).join("");
}

Deno.test("KeepalivedApplier.apply(): a file written while no keepalived runs is not_running, not success, in the result, the metric and the log; reloaded once keepalived runs", async () => {
  const records = await captureLogs();
  const dir = await Deno.makeTempDir();
  const marker = `${dir}/hup`;
  const t = await setup(); // no pid file: keepalived is not running
  let child: Deno.ChildProcess | undefined;
  try {
    const result = await t.apply("vrrp_instance a {}\n");
    assert.deepEqual([result.result, result.reloaded], ["not_running", false]);
    assert.match(result.message, /written; not reloaded: keepalived is not running/);
    assert.equal(await Deno.readTextFile(t.file), "vrrp_instance a {}\n", "the file is on disk");
    assert.equal(await t.metric("not_running"), 1);
    assert.equal(await t.metric("success"), 0);
    const lines = records.filter((r) => r.category.includes("applier")).map(text);
    assert.equal(lines.length, 1, lines.join("\n"));
    assert.match(lines[0]!, /^keepalived config not_running: .*written; not reloaded/);
    assert.doesNotMatch(lines.join("\n"), /success/);
    // still not running: the same outcome again, logged once
    assert.equal((await t.apply("vrrp_instance a {}\n")).result, "not_running");
    const info = records.filter((r) => r.category.includes("applier") && r.level === "info");
    assert.equal(info.length, 1);

    // keepalived runs now: the same text is reloaded (SIGHUP), not "unchanged"
    child = await trappingShell(`trap 'echo hup >> ${marker}' HUP`);
    await Deno.writeTextFile(t.pidFile, String(child.pid));
    const reloaded = await t.apply("vrrp_instance a {}\n");
    assert.deepEqual([reloaded.result, reloaded.reloaded], ["success", true]);
    await pollUntil("the SIGHUP mark", () => Deno.stat(marker).then(() => true, () => false));
    assert.equal(await Deno.readTextFile(marker), "hup\n");
    assert.equal(await t.metric("success"), 1);
  } finally {
    child?.kill("SIGKILL");
    await child?.status;
    await reset();
    await Deno.remove(t.dir, { recursive: true });
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("KeepalivedApplier.apply(): a pid file Keelson cannot read is an error naming it, not 'keepalived is not running'", async () => {
  const t = await setup();
  try {
    // a FIFO where the pid file should be: refused by the bounded reader, says nothing of keepalived
    await new Deno.Command("mkfifo", { args: [t.pidFile] }).output();
    const result = await t.apply("x\n");
    assert.deepEqual([result.result, result.reloaded], ["error", false]);
    assert.match(
      result.message,
      /cannot read keepalived's pid file .*keepalived\.pid: .*not a regular file/,
    );
    assert.equal(await t.metric("not_running"), 0);
    assert.equal(await t.metric("error"), 1);
  } finally {
    await Deno.remove(t.dir, { recursive: true });
  }
});
