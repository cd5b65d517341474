import assert from "node:assert/strict";
import {
  currentUser,
  userNameOf,
} from "../../../../../providers/baremetal/keepalived/current_user.ts";
import { ROOT_URL, runAsShipped } from "../../../_harness/run_as_shipped.ts";

const PASSWD = [
  "root:x:0:0:root:/root:/bin/bash",
  "keelson:x:998:998::/nonexistent:/usr/sbin/nologin",
  "Bad User:x:1001:1001::/:/bin/sh",
  "broken-line",
  "",
].join("\n");

Deno.test("userNameOf() finds a uid's name and refuses names keepalived's file may not hold", () => {
  assert.equal(userNameOf(PASSWD, 0), "root");
  assert.equal(userNameOf(PASSWD, 998), "keelson");
  assert.equal(userNameOf(PASSWD, 1001), undefined);
  assert.equal(userNameOf(PASSWD, 4242), undefined);
});

Deno.test("currentUser() names this process's user", async () => {
  const user = await currentUser();
  assert.equal(user.name, userNameOf(await Deno.readTextFile("/etc/passwd"), Deno.uid()!));
  if (Deno.uid() === 0) assert.equal(user.name, "root");
});

Deno.test("currentUser() says why a user has no name: unknown uid, unreadable passwd file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/passwd`, PASSWD);
    assert.deepEqual(await currentUser({ uid: () => 998, passwdFile: `${dir}/passwd` }), {
      name: "keelson",
    });
    assert.deepEqual(await currentUser({ uid: () => 4242, passwdFile: `${dir}/passwd` }), {
      problem: `uid 4242 has no entry in ${dir}/passwd with a portable user name`,
    });
    const missing = await currentUser({ uid: () => 0, passwdFile: `${dir}/absent` });
    assert.match(missing.name ?? missing.problem, /^cannot read .*absent: no such file/);
    const fifo = await currentUser({ uid: () => 0, passwdFile: dir });
    assert.match(fifo.name ?? fifo.problem, /is a directory/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("currentUser() works with the compiled binary's permissions (no /proc, --allow-sys=uid)", async () => {
  const run = await runAsShipped(`
import { currentUser } from "${ROOT_URL}providers/baremetal/keepalived/current_user.ts";
console.log(JSON.stringify(await currentUser()));
`);
  assert.equal(run.code, 0, run.stderr);
  const expected = userNameOf(await Deno.readTextFile("/etc/passwd"), Deno.uid()!);
  assert.ok(expected, "this test's user has a name");
  assert.deepEqual(JSON.parse(run.stdout), { name: expected });
});
