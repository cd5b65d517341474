/**
 * What `keelson check` refuses because render or run could not use it, so that a file `check`
 * accepts never fails later: each case is a small valid inventory with one hostile edit, and the
 * path and words the refusal must name.
 *
 * @module
 */
import assert from "node:assert/strict";
import { ConfigError } from "../../../src/config/config_error.ts";
import { parseConfig } from "../../../src/config/parse_config.ts";
import { renderHostKeepalived } from "../../../providers/baremetal/keepalived/announcer.ts";

/** A valid inventory: two control-plane machines (IPv4 and IPv6), a worker, one IPv4 pool. */
function inventory(edits: Record<string, string> = {}): string {
  const tables: Record<string, string> = {
    keepalived: 'interface = "eth0"\nvrid_range = [100, 119]',
    "control_plane": 'vip = ["10.0.0.10"]',
    server: 'listen = "127.0.0.1:10258"',
    "leader_election": "",
    controllers: "",
    "node_lifecycle": "",
    "load_balancer": "",
    kubernetes: "",
    cluster: "",
    ...Object.fromEntries(Object.entries(edits).filter(([k]) => !k.startsWith("["))),
  };
  const pools = edits["[[pools]]"] ??
    'name = "public"\naddresses = ["203.0.113.16/28"]';
  const machines = edits["[[machines]]"] ??
    [
      'name = "cp-1"\nrole = "control-plane"\ninternal_ips = ["10.0.0.11", "fd00::11"]',
      'name = "cp-2"\nrole = "control-plane"\ninternal_ips = ["10.0.0.12", "fd00::12"]',
      'name = "w-1"\ninternal_ips = ["10.0.0.21"]',
    ].join("\n\n[[machines]]\n");
  return [
    ...Object.entries(tables).map(([name, body]) => `[${name}]\n${body}\n`),
    `[[pools]]\n${pools}\n`,
    `[[machines]]\n${machines}\n`,
  ].join("\n");
}

function refusal(text: string): ConfigError {
  try {
    parseConfig(text, "k.toml");
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  assert.fail(`accepted:\n${text}`);
}

Deno.test("the base inventory of these cases is valid and renders on every control-plane host", () => {
  const config = parseConfig(inventory(), "k.toml");
  for (const host of ["cp-1", "cp-2"]) {
    const rendered = renderHostKeepalived({ config, host, serviceVips: ["203.0.113.18"] });
    assert.ok(!("error" in rendered), JSON.stringify(rendered));
  }
});

const CASES: [what: string, edits: Record<string, string>, path: string, words: RegExp][] = [
  // combinations render could not turn into a keepalived file
  [
    "an IPv6 pool while a control-plane machine has only IPv4",
    {
      "[[pools]]": 'name = "v6"\naddresses = ["2001:db8:1::/120"]',
      "[[machines]]":
        'name = "cp-1"\nrole = "control-plane"\ninternal_ips = ["10.0.0.11"]\n\n[[machines]]\n' +
        'name = "cp-2"\nrole = "control-plane"\ninternal_ips = ["10.0.0.12", "fd00::12"]',
    },
    "machines[0].internal_ips",
    /"cp-1" has no IPv6 address.*pool "v6"/,
  ],
  [
    "a control-plane machine without internal_ips",
    {
      "[[machines]]": 'name = "cp-1"\nrole = "control-plane"\n\n[[machines]]\n' +
        'name = "cp-2"\nrole = "control-plane"\ninternal_ips = ["10.0.0.12"]',
    },
    "machines[0].internal_ips",
    /"cp-1" has no IPv4 address/,
  ],
  [
    "vrid_range = [100, 101]",
    { keepalived: "vrid_range = [100, 101]" },
    "keepalived.vrid_range",
    /holds 2 VRIDs but at least 3 are needed/,
  ],
  [
    'advert_interval = "5ms"',
    { keepalived: 'advert_interval = "5ms"' },
    "keepalived.advert_interval",
    /between 10ms and 40950ms/,
  ],
  [
    'advert_interval = "0s"',
    { keepalived: 'advert_interval = "0s"' },
    "keepalived.advert_interval",
    /between/,
  ],
  [
    'advert_interval = "100h"',
    { keepalived: 'advert_interval = "100h"' },
    "keepalived.advert_interval",
    /between/,
  ],
  [
    'advert_interval = "205ms"',
    { keepalived: 'advert_interval = "205ms"' },
    "keepalived.advert_interval",
    /steps of 10ms/,
  ],
  [
    "a relative track_file_dir",
    { keepalived: 'track_file_dir = "run/keelson"' },
    "keepalived.track_file_dir",
    /absolute path/,
  ],
  [
    "a track_file_dir with a quote",
    { keepalived: 'track_file_dir = "/run/a b\\"}"' },
    "keepalived.track_file_dir",
    /absolute path/,
  ],
  // numbers beyond what keepalived or the renderer can take
  [
    "garp_master_refresh = 70000",
    { keepalived: "garp_master_refresh = 70000" },
    "keepalived.garp_master_refresh",
    /at most 3600/,
  ],
  [
    "201 control-plane machines",
    {
      "[[machines]]": Array.from(
        { length: 201 },
        (_, i) =>
          `name = "cp-${i}"\nrole = "control-plane"\ninternal_ips = ["10.1.${i >> 8}.${i & 255}"]`,
      ).join("\n\n[[machines]]\n"),
    },
    "machines[200].role",
    /at most 200 hosts/,
  ],
  // listen addresses run could not bind
  [
    'listen = "127.0.0.1:99999"',
    { server: 'listen = "127.0.0.1:99999"' },
    "server.listen",
    /port 99999/,
  ],
  [
    'listen = "999.999.999.999:80"',
    { server: 'listen = "999.999.999.999:80"' },
    "server.listen",
    /not an IPv4 address/,
  ],
  // durations: 0 or unbounded would disable a safeguard or a timer
  [
    'deletion_interval = "0s"',
    { node_lifecycle: 'deletion_interval = "0s"' },
    "node_lifecycle.deletion_interval",
    /between 1s and 24h/,
  ],
  [
    'health_interval = "1000h"',
    { control_plane: 'vip = ["10.0.0.10"]\nhealth_interval = "1000h"' },
    "control_plane.health_interval",
    /between 100ms and 1m/,
  ],
  [
    'health_interval = "0s"',
    { control_plane: 'vip = ["10.0.0.10"]\nhealth_interval = "0s"' },
    "control_plane.health_interval",
    /between/,
  ],
  [
    'lease_duration = "30d"-like overflow',
    { leader_election: 'lease_duration = "720h"' },
    "leader_election.lease_duration",
    /between 1s and 10m/,
  ],
  [
    'node_monitor_period = "0ms"',
    { controllers: 'node_monitor_period = "0ms"' },
    "controllers.node_monitor_period",
    /between/,
  ],
  [
    'route_reconciliation_period = "100ms"',
    { controllers: 'route_reconciliation_period = "100ms"' },
    "controllers.route_reconciliation_period",
    /between 1s and 1h/,
  ],
  // run builds the provider by name
  [
    'provider = "nope"',
    { cluster: 'provider = "nope"' },
    "cluster.provider",
    /not a provider Keelson has/,
  ],
  // names and counts the kernel, Kubernetes or keepalived would refuse or truncate
  [
    "a 24-character interface",
    { keepalived: 'interface = "abcdefghijklmnopqrstuvwx"' },
    "keepalived.interface",
    /at most 15/,
  ],
  [
    'namespaces = [""]',
    { "[[pools]]": 'name = "p"\naddresses = ["203.0.113.16/28"]\nnamespaces = [""]' },
    "pools[0].namespaces[0]",
    /namespace name/,
  ],
  [
    'namespaces = ["A B"]',
    { "[[pools]]": 'name = "p"\naddresses = ["203.0.113.16/28"]\nnamespaces = ["A B"]' },
    "pools[0].namespaces[0]",
    /namespace name/,
  ],
  [
    "a hostname with a newline and braces",
    {
      "[[machines]]":
        'name = "cp-1"\nrole = "control-plane"\ninternal_ips = ["10.0.0.11"]\nhostname = "evil host\\n}{"',
    },
    "machines[0].hostname",
    /not a host name/,
  ],
  ['class = ""', { load_balancer: 'class = ""' }, "load_balancer.class", /label key/],
  [
    "concurrent_service_syncs = 2^53",
    { controllers: "concurrent_service_syncs = 9007199254740991" },
    "controllers.concurrent_service_syncs",
    /at most 64/,
  ],
  ["qps = 1e9", { kubernetes: "qps = 1e9" }, "kubernetes.qps", /above 10000/],
  // pools hold only unicast routable addresses, parsed strictly
  ...([
    ["::", /unspecified/],
    ["::1", /loopback/],
    ["0.0.0.0/0", /unspecified/],
    ["127.0.0.0/8", /loopback/],
    ["224.0.0.0/24", /multicast/],
    ["ff02::12", /multicast/],
    ["169.254.1.0/24", /link-local/],
    ["fe80::/64", /link-local/],
    ["255.255.255.255", /broadcast/],
    ["fe80::1%eth0", /not an IP address/],
    ["10.0.20.0/24/garbage", /exactly one "\/"/],
    ["10.0.30.1-10.0.30.5-junk", /exactly one "-"/],
    [" 10.0.30.1 junk", /not an IP address/],
  ] as const).map(([entry, words]): [string, Record<string, string>, string, RegExp] => [
    `a pool holding "${entry}"`,
    { "[[pools]]": `name = "p"\naddresses = ["${entry}"]` },
    "pools[0].addresses[0]",
    words,
  ]),
  [
    "::ffff:10.0.20.0/120 beside 10.0.20.0/24",
    { "[[pools]]": 'name = "p"\naddresses = ["10.0.20.0/24", "::ffff:10.0.20.0/120"]' },
    "pools[0].addresses[1]",
    /overlaps "10\.0\.20\.0\/24" of the same pool/,
  ],
  [
    "::ffff:10.0.0.11 as one machine's IP and 10.0.0.11 as another's",
    {
      "[[machines]]":
        'name = "cp-1"\nrole = "control-plane"\ninternal_ips = ["10.0.0.11"]\n\n[[machines]]\n' +
        'name = "w-1"\ninternal_ips = ["::ffff:10.0.0.11"]',
    },
    "machines[1].internal_ips[0]",
    /duplicate IP/,
  ],
  [
    "the VRRP group as the control-plane VIP",
    { control_plane: 'vip = ["224.0.0.18"]' },
    "control_plane.vip[0]",
    /multicast/,
  ],
];

for (const [what, edits, path, words] of CASES) {
  Deno.test(`check refuses ${what}, naming ${path}`, () => {
    const error = refusal(inventory(edits));
    const issue = error.issues.find((i) => i.path === path);
    assert.ok(issue, `no issue at ${path} in:\n${error.format()}`);
    assert.match(issue.message, words, error.format());
    assert.ok(issue.line !== undefined, `no line for ${path}`);
  });
}

Deno.test("check accepts the listen forms serve.ts takes", () => {
  for (
    const listen of [":10258", "0.0.0.0:10258", "[::1]:10258", "localhost:10258", "127.0.0.1:0"]
  ) {
    parseConfig(inventory({ server: `listen = "${listen}"` }), "k.toml");
  }
});

Deno.test("check is O(n log n): 100k single-address pool entries and a reserved list", () => {
  const entries = Array.from(
    { length: 100_000 },
    (_, i) => `"10.${100 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}"`,
  );
  const config = parseConfig(
    inventory({ "[[pools]]": `name = "big"\naddresses = [${entries.join(", ")}]` }),
    "k.toml",
  );
  assert.equal(config.pools[0]!.addresses.length, 100_000);
  // and the same with one overlap at the very end is found, with its line
  const overlapping = [...entries, '"10.100.0.0/30"'];
  const error = refusal(
    inventory({ "[[pools]]": `name = "big"\naddresses = [\n${overlapping.join(",\n")}\n]` }),
  );
  assert.ok(error.issues.every((i) => i.path.startsWith("pools[0].addresses[")));
  const last = error.issues.find((i) => i.path === "pools[0].addresses[100000]");
  assert.ok(last?.line !== undefined && last.line > 100_000, error.format().slice(0, 500));
  assert.match(last.message, /overlaps "10\.100\.0\.\d" of the same pool/);
});
