import assert from "node:assert/strict";
import {
  InputFileError,
  PASSWORD_FILE,
  readInputFile,
  TOKEN_FILE,
} from "../../../src/files/read_input_file.ts";
import { accountEntry } from "../../../src/files/process_user.ts";

const MODULE = new URL("../../../src/files/read_input_file.ts", import.meta.url).href;

async function mkfifo(path: string): Promise<void> {
  const made = await new Deno.Command("mkfifo", { args: [path] }).output();
  assert.ok(made.success, "mkfifo failed");
}

async function problemOf(promise: Promise<unknown>): Promise<InputFileError> {
  const error = await promise.then(() => undefined, (e) => e);
  assert.ok(error instanceof InputFileError, `expected an InputFileError, got ${error}`);
  return error;
}

Deno.test("readInputFile() reads a regular file of its kind's size", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/token`, "s3cret\n");
    assert.equal(await readInputFile(`${dir}/token`, TOKEN_FILE), "s3cret\n");
    await Deno.writeFile(`${dir}/big`, new Uint8Array(TOKEN_FILE.maxBytes + 1));
    const error = await problemOf(readInputFile(`${dir}/big`, TOKEN_FILE));
    assert.equal(error.problem, "too-large");
    assert.match(error.message, /^is larger than 64 KiB \(65537 bytes or more\); a bearer token/);
    const password = await problemOf(readInputFile(`${dir}/big`, PASSWORD_FILE));
    assert.match(password.message, /^is larger than 4 KiB/);
    assert.equal((await problemOf(readInputFile(`${dir}/none`))).problem, "not-found");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("readInputFile() refuses a FIFO, a device and a directory before opening them", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await mkfifo(`${dir}/fifo`);
    for (const path of [`${dir}/fifo`, "/dev/zero", "/dev/null"]) {
      const error = await problemOf(readInputFile(path, TOKEN_FILE, { timeoutMs: 60_000 }));
      assert.equal(error.problem, "not-regular", path);
      assert.match(error.message, /^is not a regular file \(a FIFO, socket or device/);
    }
    const error = await problemOf(readInputFile(dir, TOKEN_FILE));
    assert.equal(error.message, "is a directory");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("readInputFile() abandons a read that does not end by its deadline", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const fifo = `${dir}/fifo`;
    await mkfifo(fifo);
    // a regular file swapped for a FIFO after stat(2): open(2) blocks until a writer appears
    const regular = await Deno.stat(import.meta.filename!);
    const started = performance.now();
    const error = await problemOf(
      readInputFile(fifo, TOKEN_FILE, { timeoutMs: 300, stat: () => Promise.resolve(regular) }),
    );
    const elapsed = performance.now() - started;
    assert.equal(error.problem, "timed-out");
    assert.match(error.message, /^was not read within 0\.3 s/);
    assert.ok(elapsed < 10_000, `gave up after ${elapsed} ms`);
    // release the blocked open(2): the late file is closed by the abandoned read
    const writer = await Deno.open(fifo, { write: true });
    writer.close();
    await new Promise((resolve) => setTimeout(resolve, 200));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("accountEntry() finds a plain name by id", () => {
  const passwd = "root:x:0:0::/root:/bin/sh\nkeelson:x:998:997::/:/usr/sbin/nologin\n" +
    "e\x1b[2J:x:5:5::/:/bin/sh\n";
  assert.deepEqual(accountEntry(passwd, 998), { name: "keelson", fourth: "997" });
  assert.equal(accountEntry(passwd, 1), undefined);
  assert.equal(accountEntry(passwd, 5), undefined, "a name with control characters is not shown");
});

Deno.test({
  name: "readInputFile() names the user that cannot read a file, and the fix",
  ignore: Deno.uid() !== 0,
  async fn() {
    // as root, make files nobody may read, then read them as nobody (uid 65534)
    const dir = await Deno.makeTempDir();
    try {
      await Deno.chmod(dir, 0o755);
      await Deno.writeTextFile(`${dir}/token`, "s3cret\n", { mode: 0o600 });
      await Deno.mkdir(`${dir}/closed`, { mode: 0o700 });
      await Deno.writeTextFile(`${dir}/closed/token`, "s3cret\n", { mode: 0o644 });
      const script = `${dir}/read.ts`;
      await Deno.writeTextFile(
        script,
        `import { readInputFile } from ${JSON.stringify(MODULE)};\n` +
          `for (const p of Deno.args) await readInputFile(p).then(() => console.log("read"), ` +
          `(e) => console.log(e.message));\n`,
      );
      const denoDir = `${dir}/deno`;
      await Deno.mkdir(denoDir);
      await Deno.chown(denoDir, 65534, 65534);
      const output = await new Deno.Command("setpriv", {
        args: [
          "--reuid=65534",
          "--regid=65534",
          "--clear-groups",
          Deno.execPath(),
          "run",
          "--no-config",
          "--allow-read",
          "--allow-sys=uid",
          script,
          `${dir}/token`,
          `${dir}/closed/token`,
        ],
        env: { DENO_DIR: denoDir, HOME: denoDir, NO_COLOR: "1" },
        clearEnv: true,
      }).output();
      const out = new TextDecoder().decode(output.stdout);
      assert.ok(output.success, new TextDecoder().decode(output.stderr));
      const group = (await Deno.readTextFile("/etc/group")).match(/^([^:]+):[^:]*:65534:/m)?.[1];
      const user = (await Deno.readTextFile("/etc/passwd")).match(/^([^:]+):[^:]*:65534:/m)?.[1];
      assert.ok(user && group, "this test needs uid and gid 65534 in /etc/passwd and /etc/group");
      const [first, second] = out.trim().split("\n");
      assert.equal(
        first,
        `is not readable by user ${user} (uid 65534): ` +
          `chown root:${group} ${dir}/token && chmod 0640 ${dir}/token`,
      );
      assert.equal(
        second,
        `cannot be reached by user ${user} (uid 65534): the directory ${dir}/closed is not ` +
          `searchable by that user; chgrp ${group} ${dir}/closed && chmod g+x ${dir}/closed ` +
          "(or o+x), and make the file readable too",
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("readInputFile(): a file that grew after stat(2) is read whole (up to its cap), not cut at the size stat saw", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/token`;
    const text = "x".repeat(70_000);
    await Deno.writeTextFile(path, text);
    // stat saw the file when it held 10 bytes (a non-atomic write was still going on)
    const stat = async (p: string) => ({ ...(await Deno.stat(p)), size: 10 });
    assert.equal(await readInputFile(path, TOKEN_FILE_FOR_GROWTH, { stat }), text);
    await Deno.writeTextFile(path, "y".repeat(TOKEN_FILE_FOR_GROWTH.maxBytes + 1));
    await assert.rejects(readInputFile(path, TOKEN_FILE_FOR_GROWTH, { stat }), /larger than/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

const TOKEN_FILE_FOR_GROWTH = { maxBytes: 100_000, what: "a test file" };
