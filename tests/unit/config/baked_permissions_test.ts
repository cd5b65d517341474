import assert from "node:assert/strict";
import {
  BAKED_WRITE_DIRS,
  mayWrite,
  writePathIssues,
} from "../../../src/config/baked_permissions.ts";
import { ConfigError } from "../../../src/config/config_error.ts";
import { loadConfigFile } from "../../../src/config/load_config.ts";
import { parseConfig } from "../../../src/config/parse_config.ts";
import { compilePermissions } from "../../integration/_harness/permissions.ts";

Deno.test("BAKED_WRITE_DIRS is exactly the --allow-write list of scripts/compile_permissions.txt", async () => {
  const flags = await compilePermissions();
  const writes = flags.filter((f) => f === "-A" || /^--allow-(all|write)(=|$)/.test(f));
  assert.equal(writes.length, 1, `one --allow-write flag with a list, got ${writes.join(" ")}`);
  const [, list] = writes[0]!.split("=", 2);
  assert.ok(list, "--allow-write names its directories");
  assert.deepEqual(list.split(","), [...BAKED_WRITE_DIRS]);
});

Deno.test("mayWrite() allows the baked directories and what is below them, nothing else", () => {
  for (const dir of BAKED_WRITE_DIRS) {
    assert.ok(mayWrite(dir), dir);
    assert.ok(mayWrite(`${dir}/x/y.conf`), `${dir}/x/y.conf`);
    assert.ok(!mayWrite(`${dir}x/y.conf`), `${dir}x: a sibling with the same prefix`);
    assert.ok(!mayWrite(`${dir}/../x.conf`), `${dir}/../x.conf`);
  }
  assert.ok(!mayWrite("/etc/keepalived/keelson.conf"));
  assert.ok(!mayWrite("/tmp/keelson.conf"));
  assert.ok(!mayWrite("/"));
});

const BASE = `[[machines]]
name = "cp-1"
role = "control-plane"
internal_ips = ["10.0.0.11"]
`;

Deno.test("writePathIssues() names every written path outside the baked set, and only those", () => {
  const config = parseConfig(
    `[keepalived]
config_file = "/etc/keepalived/keelson.conf"
track_file_dir = "/var/run/keelson"

[bgp]
asn = 64512
config_file = "/etc/bird/keelson.conf"
socket = "/run/bird2/bird.ctl"

${BASE}`,
    "k.toml",
  );
  assert.deepEqual(writePathIssues(config).map((i) => i.path.join(".")), [
    "keepalived.config_file",
    "keepalived.track_file_dir",
    "bgp.config_file",
    "bgp.socket",
  ]);
  // the defaults, and paths in subdirectories of the baked ones, pass
  assert.deepEqual(writePathIssues(parseConfig(BASE, "k.toml")), []);
  const nested = parseConfig(
    `[keepalived]
config_file = "/etc/keepalived/conf.d/a/keelson.conf"
track_file_dir = "/run/keelson/a"

[bgp]
asn = 64512
config_file = "/etc/keelson/bird/a/keelson.conf"
socket = "/run/bird/a/bird.ctl"

${BASE}`,
    "k.toml",
  );
  assert.deepEqual(writePathIssues(nested), []);
});

Deno.test("writePathIssues() leaves out what Keelson does not run: keepalived off, no [bgp]", () => {
  const off = parseConfig(
    `[keepalived]\nenabled = false\nconfig_file = "/tmp/k.conf"\ntrack_file_dir = "/tmp/t"\n\n${BASE}`,
    "k.toml",
  );
  assert.deepEqual(writePathIssues(off), []);
  // BIRD's control-plane probe writes into track_file_dir too
  const bird = parseConfig(
    `[keepalived]\nenabled = false\ntrack_file_dir = "/tmp/t"\n\n[bgp]\nasn = 64512\n\n${BASE}`,
    "k.toml",
  );
  assert.deepEqual(writePathIssues(bird).map((i) => i.path.join(".")), [
    "keepalived.track_file_dir",
  ]);
});

Deno.test("writePathIssues() refuses a track_file_dir whose -daemons sibling (notify FIFO, read-only BIRD socket) is outside the baked set", () => {
  const config = parseConfig(
    `[keepalived]
interface = "eth0"
track_file_dir = "/run/bird"

${BASE}`,
    "k.toml",
  );
  const issues = writePathIssues(config);
  assert.deepEqual(issues.map((i) => i.path.join(".")), ["keepalived.track_file_dir"]);
  assert.match(issues[0]!.message, /^"\/run\/bird-daemons" is outside the directories/);
  assert.match(issues[0]!.message, /notify FIFO and the read-only BIRD socket\)$/);
  // the default's sibling, /run/keelson-daemons, is in the set
  assert.deepEqual(
    writePathIssues(parseConfig(
      `[keepalived]
interface = "eth0"

${BASE}`,
      "k.toml",
    )),
    [],
  );
});

Deno.test("loadConfigFile() refuses a config_file the binary may not write, with file, line and why", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/keelson.toml`;
    await Deno.writeTextFile(
      path,
      `[keepalived]\ninterface = "eth0"\nconfig_file = "/etc/keepalived/keelson.conf"\n\n${BASE}`,
    );
    const error = await loadConfigFile(path).then(() => undefined, (e: unknown) => e);
    assert.ok(error instanceof ConfigError, String(error));
    assert.equal(
      error.format(),
      `${path}:3: keepalived.config_file: "/etc/keepalived/keelson.conf" is outside the ` +
        "directories the keelson binary may write: only under /etc/keepalived/conf.d, " +
        "/run/keelson, /run/keelson-daemons, /etc/keelson/bird, /run/bird (its permissions are " +
        "fixed when it is built, scripts/compile_permissions.txt); use a path under one of them " +
        '(docs/security.md "Permissions")',
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a relative [keepalived] config_file is refused: check would judge it from its own directory, run from /", () => {
  assert.throws(
    () =>
      parseConfig(
        '[cluster]\nname = "c"\n\n[keepalived]\nconfig_file = "conf.d/keelson.conf"\n\n' +
          '[[machines]]\nname = "cp-1"\nrole = "control-plane"\n',
        "k.toml",
      ),
    (error: unknown) =>
      error instanceof ConfigError &&
      /k\.toml:5: keepalived\.config_file: "conf\.d\/keelson\.conf" must be an absolute path/.test(
        error.format(),
      ),
  );
});
