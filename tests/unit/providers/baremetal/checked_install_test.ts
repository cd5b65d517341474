import assert from "node:assert/strict";
import { installChecked } from "../../../../providers/baremetal/checked_install.ts";

// a stand-in checker: rejects a file containing "bogus"
const check = (candidate: string) => [
  "sh",
  "-c",
  'if grep -q bogus "$0"; then echo "bad keyword" >&2; exit 4; fi',
  candidate,
];

Deno.test("installChecked puts an accepted text in place with the mode and leaves no temp file", async () => {
  const dir = await Deno.makeTempDir({ prefix: "keelson-install-" });
  try {
    const file = `${dir}/sub/daemon.conf`;
    const failed = await installChecked({
      file,
      text: "good\n",
      mode: 0o640,
      checkCommand: check,
      timeoutMs: 30_000,
    });
    assert.equal(failed, undefined);
    assert.equal(await Deno.readTextFile(file), "good\n");
    assert.equal((await Deno.stat(file)).mode! & 0o777 & ~0o022, 0o640 & ~0o022);
    assert.deepEqual([...Deno.readDirSync(`${dir}/sub`)].map((e) => e.name), ["daemon.conf"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("installChecked keeps the file in force when the check rejects the text", async () => {
  const dir = await Deno.makeTempDir({ prefix: "keelson-install-" });
  try {
    const file = `${dir}/daemon.conf`;
    await Deno.writeTextFile(file, "old\n");
    const failed = await installChecked({
      file,
      text: "bogus\n",
      mode: 0o644,
      checkCommand: check,
      timeoutMs: 30_000,
    });
    assert.equal(failed?.code, 4);
    assert.equal(failed?.stderr, "bad keyword\n");
    assert.equal(failed?.timedOut, false);
    assert.equal(await Deno.readTextFile(file), "old\n");
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["daemon.conf"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("installChecked keeps the file when the check does not finish in time", async () => {
  const dir = await Deno.makeTempDir({ prefix: "keelson-install-" });
  try {
    const file = `${dir}/daemon.conf`;
    await Deno.writeTextFile(file, "old\n");
    const failed = await installChecked({
      file,
      text: "new\n",
      mode: 0o644,
      checkCommand: () => ["sleep", "30"],
      timeoutMs: 100,
    });
    assert.equal(failed?.timedOut, true);
    assert.equal(await Deno.readTextFile(file), "old\n");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
