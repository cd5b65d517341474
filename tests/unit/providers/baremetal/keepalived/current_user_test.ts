import assert from "node:assert/strict";
import {
  currentUserName,
  userNameOf,
} from "../../../../../providers/baremetal/keepalived/current_user.ts";

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

Deno.test("currentUserName() names this process's user", () => {
  const name = currentUserName();
  if (name !== undefined) assert.match(name, /^[a-z_][a-z0-9_-]{0,31}$/);
  if (Deno.uid() === 0) assert.equal(name, "root");
});
