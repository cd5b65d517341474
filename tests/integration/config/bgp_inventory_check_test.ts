/**
 * `check` refuses BGP inventories that BIRD would refuse (`bird -p`) or whose sessions could
 * never come up or would announce the wrong thing, each with the file, line and reason. Every
 * case was accepted before (or crashed `check`).
 *
 * @module
 */
import assert from "node:assert/strict";
import { ConfigError } from "../../../src/config/config_error.ts";
import { parseConfig } from "../../../src/config/parse_config.ts";
import { issues } from "../../unit/config/_issues.ts";

const BASE = await Deno.readTextFile(new URL("../../unit/config/bgp/base.toml", import.meta.url));

/** Applies each [from, to] replacement (each `from` must occur) to the base inventory. */
function variant(...edits: [string, string][]): string {
  let text = BASE;
  for (const [from, to] of edits) {
    assert.ok(text.includes(from), `base lacks ${from}`);
    text = text.replace(from, to);
  }
  return text;
}

/** 1-based line where `fragment` starts. */
function lineOf(text: string, fragment: string): number {
  const at = text.indexOf(fragment);
  assert.ok(at >= 0, `text lacks ${fragment}`);
  return text.slice(0, at).split("\n").length;
}

const TOR_A = 'address = "10.0.0.1"';
const RR_1 = 'address = "10.9.0.1"';
const rr1 = (address: string): [string, string] => [RR_1, `address = "${address}"`];

/** [what, edits, fragment of the line named, path, words of the message] */
const CASES: [string, [string, string][], string, string, string][] = [
  [
    "a family listed twice (bird -p: Multiple ipv4 channels)",
    [['families = ["ipv4", "ipv6"]', 'families = ["ipv4", "ipv6", "ipv4"]']],
    "families =",
    "bgp.families[2]",
    '"ipv4" is listed twice',
  ],
  [
    "a link-local peer with subnet (bird -p: Link-local addresses require defined interface)",
    [[TOR_A, 'address = "fe80::1"'], ['subnet = "10.0.0.0/24"', 'subnet = "fe80::/64"']],
    'address = "fe80::1"',
    "bgp.peers[0].address",
    "link-local",
  ],
  [
    "a link-local peer with multihop",
    [rr1("fe80::9")],
    'address = "fe80::9"',
    "bgp.peers[1].address",
    "link-local",
  ],
  [
    ":: with multihop (bird -p: Neighbor must be configured)",
    [rr1("::")],
    'address = "::"',
    "bgp.peers[1].address",
    "unspecified",
  ],
  ["0.0.0.0", [rr1("0.0.0.0")], 'address = "0.0.0.0"', "bgp.peers[1].address", "unspecified"],
  ["loopback", [rr1("127.0.0.1")], 'address = "127.0.0.1"', "bgp.peers[1].address", "loopback"],
  [
    "broadcast",
    [rr1("255.255.255.255")],
    'address = "255.255.255.255"',
    "bgp.peers[1].address",
    "broadcast",
  ],
  ["multicast", [rr1("224.0.0.5")], 'address = "224.0.0.5"', "bgp.peers[1].address", "multicast"],
  [
    "the host itself",
    [rr1("10.0.1.13")],
    'address = "10.0.1.13"',
    "bgp.peers[1].address",
    'an address of machine "cp-3"',
  ],
  [
    "another machine (a worker)",
    [rr1("10.0.0.21")],
    'address = "10.0.0.21"',
    "bgp.peers[1].address",
    'an address of machine "w-1"',
  ],
  [
    "a host's source address",
    [
      ['source_address = "10.0.0.12"', 'source_address = "192.168.50.2"'],
      rr1("192.168.50.2"),
    ],
    'address = "192.168.50.2"',
    "bgp.peers[1].address",
    'an address of machine "cp-2"',
  ],
  [
    "the control-plane VIP",
    [rr1("10.0.0.10")],
    'address = "10.0.0.10"',
    "bgp.peers[1].address",
    "the control-plane VIP",
  ],
  [
    "inside a VRRP pool",
    [rr1("192.0.2.5")],
    'address = "192.0.2.5"',
    "bgp.peers[1].address",
    'pool "vrrp-pool"',
  ],
  [
    "inside a BGP pool",
    [rr1("198.51.100.3")],
    'address = "198.51.100.3"',
    "bgp.peers[1].address",
    'pool "bgp-public"',
  ],
  [
    "a zone id (crashed check: Cannot read properties of undefined)",
    [rr1("fe80::1%eth0")],
    'address = "fe80::1%eth0"',
    "bgp.peers[1].address",
    "no zone id",
  ],
  [
    "source_address of the other family",
    [['source_address = "10.0.0.12"', 'source_address = "fd00::12"']],
    "bgp = { router_id",
    "machines[1].bgp.source_address",
    'peer "tor-a" (10.0.0.1) is IPv4',
  ],
  [
    "source_address of another host",
    [['source_address = "10.0.0.12"', 'source_address = "10.0.0.11"']],
    "bgp = { router_id",
    "machines[1].bgp.source_address",
    'an address of machine "cp-1"',
  ],
  [
    "source_address of a host listed after it (accepted before: the first machine claimed it)",
    [[
      'internal_ips = ["10.0.0.11", "fd00::11"]',
      'internal_ips = ["10.0.0.11", "fd00::11"]\nbgp = { source_address = "10.0.0.12" }',
    ]],
    'bgp = { source_address = "10.0.0.12" }',
    "machines[0].bgp.source_address",
    'an address of machine "cp-2", not of "cp-1"',
  ],
  [
    "source_address of a worker listed after it",
    [[
      'internal_ips = ["10.0.0.11", "fd00::11"]',
      'internal_ips = ["10.0.0.11", "fd00::11"]\nbgp = { source_address = "10.0.0.21" }',
    ]],
    'bgp = { source_address = "10.0.0.21" }',
    "machines[0].bgp.source_address",
    'an address of machine "w-1", not of "cp-1"',
  ],
  [
    "source_address that is the control-plane VIP",
    [['source_address = "10.0.0.12"', 'source_address = "10.0.0.10"']],
    "bgp = { router_id",
    "machines[1].bgp.source_address",
    "the control-plane VIP",
  ],
  [
    'router_id = "0.0.0.0"',
    [['router_id = "10.255.0.2"', 'router_id = "0.0.0.0"']],
    "bgp = { router_id",
    "machines[1].bgp.router_id",
    "non-zero",
  ],
  [
    "two hosts with one router id",
    [[
      'internal_ips = ["10.0.1.13", "fd00:1::13"]',
      'internal_ips = ["10.0.1.13", "fd00:1::13"]\nbgp = { router_id = "10.255.0.2" }',
    ]],
    'bgp = { router_id = "10.255.0.2" }',
    "machines[2].bgp.router_id",
    'also the router id of machine "cp-2"',
  ],
  [
    "no peer carries the control-plane VIP announced over BGP",
    [
      ["bfd = true\n", "bfd = true\ncontrol_plane = false\n"],
      ["multihop = 2\n", "multihop = 2\ncontrol_plane = false\n"],
    ],
    'announce = "bgp"\n\n[bgp]',
    "control_plane.announce",
    "control_plane = true",
  ],
  [
    "an IPv6 peer of a host without IPv6",
    [rr1("fd00:9::1"), [
      'internal_ips = ["10.0.1.13", "fd00:1::13"]',
      'internal_ips = ["10.0.1.13"]',
    ]],
    'address = "fd00:9::1"',
    "bgp.peers[1].address",
    'host "cp-3" peering with it has no IPv6 address',
  ],
  [
    "an IPv6 BGP pool on a host without IPv6",
    [['internal_ips = ["10.0.0.11", "fd00::11"]', 'internal_ips = ["10.0.0.11"]']],
    '"2001:db8:100::/124"',
    "pools[1].addresses[1]",
    'host "cp-1" has no IPv6 address',
  ],
];

for (const [what, edits, fragment, path, words] of CASES) {
  Deno.test(`check refuses a BGP inventory with ${what}, naming ${path} and its line`, () => {
    const text = variant(...edits);
    const found = issues(text);
    const issue = found.find((i) => i.path === path && i.message.includes(words));
    assert.ok(issue, `no issue at ${path} saying ${words}; got ${JSON.stringify(found, null, 1)}`);
    assert.equal(issue.line, lineOf(text, fragment), `line of ${path}`);
  });
}

Deno.test("the base BGP inventory and IPv4 link-local peers (169.254.0.0/16) stay accepted", () => {
  assert.deepEqual(issues(BASE), []);
  // BIRD takes an IPv4 link-local neighbor without an interface (e.g. a /30 on a direct link)
  assert.deepEqual(issues(variant(rr1("169.254.0.1"))), []);
});

Deno.test("a zone id in any BGP address is a ConfigError with a line, never a TypeError", () => {
  for (
    const [from, to] of [
      [TOR_A, 'address = "fe80::1%eth0"'],
      ['source_address = "10.0.0.12"', 'source_address = "fe80::12%eth0"'],
    ] as const
  ) {
    const text = variant([from, to]);
    assert.throws(() => parseConfig(text, "keelson.toml"), (error) => {
      assert.ok(error instanceof ConfigError, String(error));
      const issue = error.issues.find((i) => i.message.includes("no zone id"));
      assert.ok(issue?.line !== undefined, JSON.stringify(error.issues));
      return true;
    });
  }
});

Deno.test("check and render bird name the file and line of a peer written fe80::1%eth0 (both crashed)", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/keelson.toml`;
    const text = variant([TOR_A, 'address = "fe80::1%eth0"']);
    await Deno.writeTextFile(path, text);
    const main = new URL("../../../main.ts", import.meta.url).pathname;
    for (const args of [["check"], ["render", "bird", "--host", "cp-1"]]) {
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["run", "--allow-all", main, ...args, "--config", path],
        stdout: "piped",
        stderr: "piped",
        env: { NO_COLOR: "1" },
      }).output();
      const all = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
      assert.equal(out.code, 1, all);
      assert.ok(all.includes(`${path}:${lineOf(text, 'address = "fe80::1%eth0"')}:`), all);
      assert.ok(!all.includes("Cannot read properties"), all);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
