import assert from "node:assert/strict";
import { ConfigError } from "../../../src/config/config_error.ts";
import { parseConfig } from "../../../src/config/parse_config.ts";

const TESTDATA = new URL("./testdata/", import.meta.url);
const EXAMPLE = new URL("../../../deploy/examples/keelson.toml", import.meta.url);

function issuesOf(text: string, source = "keelson.toml"): ConfigError {
  try {
    parseConfig(text, source);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  assert.fail("expected a ConfigError");
}

/** Each broken file: the line and path the main issue must name, and a word of its message. */
const BROKEN: [file: string, line: number, path: string, words: string][] = [
  ["syntax_error.toml", 9, "", "Cannot parse TOML"],
  ["unknown_key.toml", 6, "pools[0].adresses", 'did you mean "addresses"'],
  ["unknown_table.toml", 4, "keepalive", 'did you mean "keepalived"'],
  ["bad_cidr.toml", 15, "pools[1].addresses[1]", '"10.0.0.300/24" is not an IP range'],
  ["overlapping_pools.toml", 10, "pools[1].addresses[1]", 'overlaps "192.0.2.0/26"'],
  ["duplicate_machine.toml", 10, "machines[2].name", 'duplicate machine name "w-1"'],
  ["duplicate_ip.toml", 11, "machines[1].internal_ips[1]", "machines[0].internal_ips[1]"],
  ["vrid_out_of_range.toml", 3, "keepalived.vrid_range", "[0, 300] is out of range"],
  ["vrid_too_small.toml", 2, "keepalived.vrid_range", "at least 4 are needed"],
  ["missing_required.toml", 4, "machines[1].name", "is missing"],
  ["wrong_type.toml", 3, "control_plane.port", 'must be a number, not "6443"'],
  ["reserved_outside_pool.toml", 6, "pools[0].reserved[1]", '"192.0.2.40" lies outside'],
  ["pool_contains_machine_ip.toml", 3, "pools[0].addresses[0]", 'contains "10.0.0.11"'],
  ["reserved_label.toml", 3, 'machines[0].labels["node-role.kubernetes.io/gpu"]', "ignores"],
  ["reserved_label.toml", 8, 'machines[1].labels["k8s.io/owner"]', "ignores"],
  ["vip_in_pool.toml", 2, "control_plane.vip[0]", 'lies inside "192.0.2.0/28"'],
  ["vip_in_pool.toml", 2, "control_plane.vip[1]", "second IPv4 VIP"],
  ["tls_half.toml", 3, "server.tls_key_file", "tls_cert_file is not"],
  ["leader_election_durations.toml", 2, "leader_election.lease_duration", "longer than"],
  ["leader_election_durations.toml", 3, "leader_election.renew_deadline", "1.2 × retry_period"],
  ["no_vrrp_peer.toml", 2, "keepalived.enabled", "VRRP peer"],
];

Deno.test("parseConfig() accepts the example inventory in deploy/examples", async () => {
  const config = parseConfig(await Deno.readTextFile(EXAMPLE), "keelson.toml");
  assert.equal(config.cluster.name, "dc1-prod");
  assert.equal(config.machines.length, 9);
  assert.deepEqual(config.pools.map((p) => p.name), ["public", "public-bgp", "internal-v6"]);
  assert.deepEqual(config.bgp?.peers.map((p) => p.name), ["tor-a", "tor-b"]);
});

Deno.test("parseConfig() fills defaults around the one machine a minimal file lists", () => {
  const config = parseConfig('[[machines]]\nname = "w-1"\n', "keelson.toml");
  assert.equal(config.cluster.name, "kubernetes");
  assert.deepEqual(config.keepalived.vrid_range, [100, 119]);
  assert.deepEqual(config.machines.map((m) => m.name), ["w-1"]);
});

Deno.test("parseConfig() refuses an empty file: the inventory lists no machines", () => {
  for (const text of ["", "# nothing\n", '[cluster]\nname = "lab"\n']) {
    const error = issuesOf(text);
    assert.equal(error.issues.length, 1);
    assert.equal(error.issues[0]!.path, "machines");
    assert.match(error.issues[0]!.message, /the inventory lists no machines/);
  }
});

for (const [file, line, path, words] of BROKEN) {
  Deno.test(`parseConfig() rejects ${file} naming line ${line} and "${path}"`, async () => {
    const error = issuesOf(await Deno.readTextFile(new URL(file, TESTDATA)), file);
    const issue = error.issues.find((i) => i.path === path && i.line === line);
    assert.ok(issue, `no issue at ${file}:${line} ${path} in:\n${error.format()}`);
    assert.equal(issue.file, file);
    assert.ok(issue.message.includes(words), `"${issue.message}" lacks "${words}"`);
  });
}

Deno.test("parseConfig() reports exactly the golden issues of every broken file", async () => {
  const files = [...Deno.readDirSync(TESTDATA)].map((e) => e.name).filter((n) =>
    n.endsWith(".toml")
  );
  assert.ok(files.length >= 10);
  for (const file of files) {
    const error = issuesOf(await Deno.readTextFile(new URL(file, TESTDATA)), file);
    const golden = await Deno.readTextFile(new URL(file.replace(/\.toml$/, ".expected"), TESTDATA));
    assert.equal(error.format() + "\n", golden, file);
  }
});

Deno.test("parseConfig() gathers schema and cross-field issues of one file together", () => {
  const error = issuesOf(`
[control_plane]
port = 0

[[machines]]
name = "a"
internal_ips = ["10.0.0.1"]

[[machines]]
name = "a"
internal_ips = ["10.0.0.1"]
`);
  assert.deepEqual(error.issues.map((i) => `${i.line} ${i.path}`), [
    "3 control_plane.port",
    "10 machines[1].name",
    "11 machines[1].internal_ips[0]",
  ]);
});

Deno.test("parseConfig() treats a machine id equal to another machine's name as a duplicate", () => {
  const error = issuesOf('[[machines]]\nname = "a"\n\n[[machines]]\nname = "b"\nid = "a"\n');
  assert.equal(error.issues.length, 1);
  assert.equal(error.issues[0]!.path, "machines[1].id");
  assert.equal(error.issues[0]!.line, 6);
});

Deno.test("parseConfig() allows a pool spanning a machine address that is reserved", () => {
  const config = parseConfig(
    `[[pools]]
name = "lan"
addresses = ["10.0.0.0/24"]
reserved = ["10.0.0.11"]

[[machines]]
name = "cp-1"
role = "control-plane"
internal_ips = ["10.0.0.11"]
`,
    "keelson.toml",
  );
  assert.equal(config.pools[0]!.name, "lan");
});

Deno.test("parseConfig() skips leader election timings when election is off", () => {
  const config = parseConfig(
    '[leader_election]\nenabled = false\nlease_duration = "1s"\nrenew_deadline = "5s"\n' +
      '[[machines]]\nname = "w-1"\n',
    "keelson.toml",
  );
  assert.equal(config.leader_election.enabled, false);
});

Deno.test("parseConfig() reports a reversed vrid_range", () => {
  const error = issuesOf("[keepalived]\nenabled = false\nvrid_range = [120, 100]\n");
  assert.equal(error.issues[0]!.line, 3);
  assert.match(error.issues[0]!.message, /reversed/);
});

Deno.test("parseConfig() finishes on a 100 KB header of 50k dotted keys, naming its line", () => {
  const keys = Array.from({ length: 50_000 }, (_, i) => `k${i}`);
  const error = issuesOf(`[[machines]]\nname = "w-1"\n\n[${keys.join(".")}]\nx = 1\n`);
  const issue = error.issues.find((i) => i.path === "k0");
  assert.ok(issue, error.format().slice(0, 300));
  assert.equal(issue.line, 4);
  assert.match(issue.message, /unknown key/);
});
