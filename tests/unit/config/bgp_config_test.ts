import assert from "node:assert/strict";
import { parseCommunity } from "../../../src/config/bgp_values.ts";
import { passwordProblem, readBgpSecrets } from "../../../src/config/bgp_secrets.ts";
import { ConfigError } from "../../../src/config/config_error.ts";
import { loadConfigFile } from "../../../src/config/load_config.ts";
import { parseConfig } from "../../../src/config/parse_config.ts";
import { issues } from "./_issues.ts";

const BASE = await Deno.readTextFile(new URL("./bgp/base.toml", import.meta.url));

/** Replaces `from` (which must occur) in the base inventory. */
function variant(from: string, to: string): string {
  assert.ok(BASE.includes(from), `base lacks ${from}`);
  return BASE.replace(from, to);
}

/** 1-based line where `fragment` (possibly several lines) starts. */
function lineOf(text: string, fragment: string): number {
  const at = text.indexOf(fragment);
  assert.ok(at >= 0, `text lacks ${fragment}`);
  return text.slice(0, at).split("\n").length;
}

Deno.test("the BGP base inventory validates with its defaults filled in", () => {
  const config = parseConfig(BASE, "keelson.toml");
  assert.equal(config.bgp?.asn, 64513);
  assert.deepEqual(config.bgp?.error_wait_time, [1, 30]);
  assert.equal(config.bgp?.connect_delay_time, 1);
  assert.equal(config.bgp?.peers[0]?.bfd, true);
  assert.equal(config.pools[1]?.announce, "bgp");
  assert.equal(config.pools[0]?.announce, "vrrp");
  assert.equal(config.machines[1]?.bgp?.asn, 64514);
  assert.equal(config.control_plane.announce, "bgp");
});

/** [replace, with, fragment of the line the issue must name, path, words of the message] */
const BAD: [string, string, string, string, string][] = [
  ["asn = 64513\nhold", "asn = 23456\nhold", "asn = 23456", "bgp.asn", "AS_TRANS"],
  ["asn = 64513\nhold", "asn = 0\nhold", "asn = 0", "bgp.asn", "at least 1"],
  [
    "asn = 64512\nzones",
    "asn = 4294967296\nzones",
    "asn = 4294967296",
    "bgp.peers[0].asn",
    "4294967295",
  ],
  [
    "keepalive_time = 3",
    "keepalive_time = 9",
    "keepalive_time = 9",
    "bgp.keepalive_time",
    "less than hold_time",
  ],
  ["hold_time = 9", "hold_time = 2", "hold_time = 2", "bgp.hold_time", "at least 3"],
  [
    "families = [",
    "error_wait_time = [30, 1]\nfamilies = [",
    "error_wait_time",
    "bgp.error_wait_time",
    "minimum",
  ],
  ['"65000:7"', '"65536:7"', '"65536:7"', "bgp.peers[0].communities[2]", "0-65535"],
  ['"65000:7"', '"nope"', '"nope"', "bgp.peers[0].communities[2]", "alias"],
  ['"65000:7"', '"a\\" ; }"', "communities = [", "bgp.peers[0].communities[2]", "must be"],
  ['name = "tor-a"', 'name = "tor\\"a"', 'name = "tor', "bgp.peers[0].name", "lower-case"],
  [
    'hosts = ["cp-3"]',
    'hosts = ["w-1"]',
    'hosts = ["w-1"]',
    "bgp.peers[1].hosts[0]",
    "not a control-plane",
  ],
  [
    'zones = ["row-a"]',
    'zones = ["row-z"]',
    'zones = ["row-z"]',
    "bgp.peers[0].zones[0]",
    'zone "row-z"',
  ],
  [
    'pools = ["bgp-public"]',
    'pools = ["vrrp-pool"]',
    'pools = ["vrrp-pool"]',
    "bgp.peers[0].pools[0]",
    'announce = "vrrp"',
  ],
  [
    "local_preference = 200",
    "local_preference = 200\nasn_x = 1",
    "asn_x",
    "bgp.peers[1].asn_x",
    "unknown key",
  ],
  [
    "asn = 64513\nhosts",
    "asn = 64999\nhosts",
    "local_preference",
    "bgp.peers[1].local_preference",
    "iBGP",
  ],
  [
    'subnet = "10.0.0.0/24"',
    'subnet = "10.1.0.0/24"',
    "subnet =",
    "bgp.peers[0].subnet",
    "does not hold",
  ],
  ['subnet = "10.0.0.0/24"\n', "", "pod_cidrs = true", "bgp.peers[0].pod_cidrs", "set subnet"],
  [
    'families = ["ipv4", "ipv6"]',
    'families = ["ipv4"]',
    '"2001:db8:100::/124"',
    "pools[1].addresses[1]",
    'include "ipv6"',
  ],
  [
    'router_id = "10.255.0.2"',
    'router_id = "fd00::1"',
    "router_id",
    "machines[1].bgp.router_id",
    "IPv4",
  ],
  [
    'source_address = "10.0.0.12"',
    'source_address = "x"',
    "source_address",
    "machines[1].bgp.source_address",
    "not an IP",
  ],
  [
    'address = "10.9.0.1"',
    'address = "10.0.0.1"',
    'address = "10.0.0.1"\nasn = 64513',
    "bgp.peers[1].address",
    "also the address",
  ],
];

for (const [from, to, fragment, path, words] of BAD) {
  Deno.test(`check rejects ${path}: ${words}`, () => {
    const text = variant(from, to);
    const found = issues(text);
    const issue = found.find((i) => i.path === path);
    assert.ok(issue, `no issue at ${path}; got ${JSON.stringify(found)}`);
    assert.ok(issue.message.includes(words), issue.message);
    assert.equal(issue.line, lineOf(text, fragment), `line of ${path}`);
  });
}

Deno.test("a BGP pool without a [bgp] table is refused at its announce key", () => {
  const text = '[[pools]]\nname = "p"\naddresses = ["198.51.100.0/28"]\nannounce = "bgp"\n';
  const issue = issues(text).find((i) => i.path === "pools[0].announce");
  assert.ok(issue?.message.includes("no [bgp] table"));
  assert.equal(issue?.line, 4);
});

Deno.test("parseCommunity() reads standard and large communities with range checks", () => {
  assert.deepEqual(parseCommunity("64512:100"), { kind: "standard", values: [64512, 100] });
  assert.deepEqual(parseCommunity("4200000000:1:2"), { kind: "large", values: [4200000000, 1, 2] });
  assert.ok("error" in parseCommunity("4294967296:1:2"));
  assert.ok("error" in parseCommunity("1:2:3:4"));
  assert.ok("error" in parseCommunity("1"));
});

Deno.test("passwordProblem() allows printable ASCII up to 80 bytes, nothing else", () => {
  assert.equal(passwordProblem("s3cr3t-Key_!#$%&'()*+,./:;<=>?@[]^`{|}~"), undefined);
  assert.equal(passwordProblem("k".repeat(80)), undefined);
  assert.match(passwordProblem("k".repeat(81))!, /80/);
  for (const bad of ['ab"cd', "a\\b", "a b", "a\nb", "é", "", 'x"; }; protocol bgp evil { ']) {
    assert.ok(passwordProblem(bad), `accepted ${JSON.stringify(bad)}`);
  }
});

Deno.test("loadConfigFile() reads password files and names file:line of a bad one", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/good`, "Secr3t-key\n");
    await Deno.chmod(`${dir}/good`, 0o600);
    await Deno.writeTextFile(`${dir}/bad`, 'x"; } protocol bgp evil {\n');
    await Deno.chmod(`${dir}/bad`, 0o600);
    const good = variant("bfd = true", `bfd = true\npassword_file = "${dir}/good"`);
    await Deno.writeTextFile(`${dir}/good.toml`, good);
    const config = await loadConfigFile(`${dir}/good.toml`);
    const secrets = await readBgpSecrets(config);
    assert.equal(secrets.passwords.get(`${dir}/good`), "Secr3t-key");

    const bad = variant("bfd = true", `bfd = true\npassword_file = "${dir}/bad"`);
    await Deno.writeTextFile(`${dir}/bad.toml`, bad);
    const error = await loadConfigFile(`${dir}/bad.toml`).then(() => undefined, (e) => e);
    assert.ok(error instanceof ConfigError);
    assert.equal(error.issues[0]?.path, "bgp.peers[0].password_file");
    assert.equal(error.issues[0]?.line, lineOf(bad, "password_file"));
    assert.match(error.issues[0]!.message, /printable ASCII/);
    assert.ok(!error.message.includes("evil"), "the password must never be quoted");

    const missing = variant("bfd = true", `bfd = true\npassword_file = "${dir}/none"`);
    await Deno.writeTextFile(`${dir}/missing.toml`, missing);
    const error2 = await loadConfigFile(`${dir}/missing.toml`).then(() => undefined, (e) => e);
    assert.ok(error2 instanceof ConfigError);
    assert.match(error2.issues[0]!.message, /cannot read/);

    // a key every user of the host can read (or replace) is refused, without quoting it
    for (const [mode, what] of [[0o644, "readable"], [0o602, "writable"]] as const) {
      await Deno.chmod(`${dir}/good`, mode);
      const error3 = await loadConfigFile(`${dir}/good.toml`).then(() => undefined, (e) => e);
      assert.ok(error3 instanceof ConfigError, `mode ${mode.toString(8)} accepted`);
      assert.equal(error3.issues[0]?.line, lineOf(good, "password_file"));
      assert.match(
        error3.issues[0]!.message,
        new RegExp(`is ${what} by every user of the host \\(mode 6\\d\\d\\); chmod 600`),
      );
      assert.ok(!error3.message.includes("Secr3t"), "the password must never be quoted");
    }
    await Deno.chmod(`${dir}/good`, 0o640);
    assert.equal((await readBgpSecrets(await loadConfigFile(`${dir}/good.toml`))).issues.length, 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
