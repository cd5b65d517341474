/**
 * The places Keelson may write are named three times: the binary's `--allow-write`
 * (scripts/compile_permissions.txt), the units' sandboxes (`ReadWritePaths=` and
 * `RuntimeDirectory=` of keelson.service, the root step keelson-apply.service, and their BGP
 * drop-ins; one binary runs both), and the directories tmpfiles.d makes for them (keelson.tmpfiles,
 * keelson-bgp.tmpfiles). A path in one and not another is a host where a write fails: this keeps
 * the three equal. And the line between the two: the unprivileged agent writes only its own
 * runtime directory and is in no other group (it reaches BIRD only through the root step's
 * read-only socket), the daemons' files and root's side of the FIFO and that socket are root's.
 */
import assert from "node:assert/strict";

const REPO = new URL("../../../", import.meta.url);

async function text(path: string): Promise<string> {
  return await Deno.readTextFile(new URL(path, REPO));
}

/** Values of `key=` in a unit file's lines, split on spaces, "-" (ignore if missing) removed. */
function unitValues(unit: string, key: string): string[] {
  return unit.split("\n")
    .filter((line) => line.startsWith(`${key}=`))
    .flatMap((line) => line.slice(key.length + 1).split(/\s+/))
    .filter((value) => value !== "")
    .map((value) => value.replace(/^-/, ""));
}

/** tmpfiles.d `d` lines: path, mode, user, group. */
function tmpfilesDirs(file: string): Array<{ path: string; mode: string; user: string }> {
  return file.split("\n")
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields[0] === "d")
    .map((fields) => ({ path: fields[1]!, mode: fields[2]!, user: fields[3]! }));
}

Deno.test("write paths: --allow-write, the unit's sandbox and tmpfiles.d name the same directories", async () => {
  const permissions = await text("scripts/compile_permissions.txt");
  const allowWrite = permissions.match(/^--allow-write=(\S+)$/m)?.[1]?.split(",");
  assert.ok(allowWrite, "compile_permissions.txt has one --allow-write=LIST line");

  const unit = await text("deploy/systemd/keelson.service");
  const bgp = await text("deploy/systemd/keelson.service.d/bgp.conf");
  const apply = await text("deploy/systemd/keelson-apply.service");
  const applyBgp = await text("deploy/systemd/keelson-apply.service.d/bgp.conf");
  const agent = [
    ...unitValues(unit, "ReadWritePaths"),
    ...unitValues(bgp, "ReadWritePaths"),
    ...unitValues(unit, "RuntimeDirectory").map((name) => `/run/${name}`),
  ];
  const sandbox = new Set([
    ...agent,
    ...unitValues(apply, "ReadWritePaths"),
    ...unitValues(applyBgp, "ReadWritePaths"),
  ]);
  assert.deepEqual([...sandbox].sort(), [...allowWrite].sort());
  assert.deepEqual([...agent].sort(), ["/run/keelson"], "the agent writes its own");
  // group bird reaches BIRD's control socket, which runs every command: only the root step
  assert.deepEqual([
    ...unitValues(unit, "SupplementaryGroups"),
    ...unitValues(bgp, "SupplementaryGroups"),
  ], []);
  assert.deepEqual(unitValues(applyBgp, "SupplementaryGroups"), ["bird"]);

  const dirs = [
    ...tmpfilesDirs(await text("deploy/systemd/keelson.tmpfiles")),
    ...tmpfilesDirs(await text("deploy/systemd/keelson-bgp.tmpfiles")),
  ];
  for (const path of allowWrite) {
    assert.ok(dirs.some((d) => d.path === path), `tmpfiles.d makes ${path}`);
  }
  // a directory Keelson owns is one it may write to; /etc/keelson (root's) is not
  for (const dir of dirs.filter((d) => d.user === "keelson")) {
    assert.ok(
      allowWrite.some((p) => dir.path === p || dir.path.startsWith(`${p}/`)),
      `${dir.path} is keelson's: in --allow-write`,
    );
  }
  // what the daemons read is root's: the agent only stages; so is the directory of the notify FIFO
  // and the read-only BIRD socket, which the agent opens but must not replace
  for (const path of ["/etc/keepalived/conf.d", "/etc/keelson/bird", "/run/keelson-daemons"]) {
    assert.equal(dirs.find((d) => d.path === path)?.user, "root", `${path} is root's`);
  }
  assert.deepEqual(dirs.find((d) => d.path === "/run/keelson-daemons"), {
    path: "/run/keelson-daemons",
    mode: "2750",
    user: "root",
  });
  assert.deepEqual(dirs.find((d) => d.path === "/etc/keelson"), {
    path: "/etc/keelson",
    mode: "2750",
    user: "root",
  });
});

Deno.test("write paths: the unit makes the tmpfiles.d directories before each start, as root", async () => {
  const unit = await text("deploy/systemd/keelson.service");
  const bgp = await text("deploy/systemd/keelson.service.d/bgp.conf");
  assert.match(unit, /^ExecStartPre=\+\/usr\/bin\/systemd-tmpfiles --create keelson\.conf$/m);
  assert.match(bgp, /^ExecStartPre=\+\/usr\/bin\/systemd-tmpfiles --create keelson-bgp\.conf$/m);
  // before the check, whose sandbox needs keelson.conf's directories
  const pre = unit.split("\n").filter((line) => line.startsWith("ExecStartPre="));
  assert.ok(pre.findIndex((l) => l.includes("systemd-tmpfiles")) === 0, pre.join("\n"));
});

Deno.test("capabilities: the agent holds none, the root step none either", async () => {
  for (const file of ["deploy/systemd/keelson.service", "deploy/systemd/keelson-apply.service"]) {
    const unit = await text(file);
    assert.deepEqual(unitValues(unit, "CapabilityBoundingSet"), [], `${file}: no capability`);
    assert.match(unit, /^CapabilityBoundingSet=$/m, `${file} empties the bounding set`);
    assert.deepEqual(unitValues(unit, "AmbientCapabilities"), [], file);
    assert.match(unit, /^NoNewPrivileges=yes$/m, file);
  }
});
