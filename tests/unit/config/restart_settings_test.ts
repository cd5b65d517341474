import assert from "node:assert/strict";
import { parseConfig } from "../../../src/config/parse_config.ts";
import {
  pendingRestart,
  pinStartOnly,
  START_ONLY_SETTINGS,
} from "../../../src/config/restart_settings.ts";
import type { Config } from "../../../src/config/types.ts";
import { decodeHostReport } from "../../../src/status/host_report.ts";
import { encodeHostReport } from "../../../src/status/encode_host_report.ts";
import { report } from "../status/_leases.ts";

/** cp-1 and cp-2 run keepalived and BIRD; w-1 runs neither. */
const BASE = `
[cluster]
name = "dc1"
cluster_cidr = ["10.244.0.0/16"]

[keepalived]
interface = "eth0"

[control_plane]
vip = ["10.0.0.10"]

[bgp]
asn = 64513

[[bgp.peers]]
name = "tor-a"
address = "10.0.0.1"
asn = 64512

[[pools]]
name = "lan"
addresses = ["192.0.2.0/28"]

[[machines]]
name = "cp-1"
role = "control-plane"
internal_ips = ["10.0.0.11"]

[[machines]]
name = "cp-2"
role = "control-plane"
internal_ips = ["10.0.0.12"]

[[machines]]
name = "w-1"
internal_ips = ["10.0.0.21"]
`;

function config(edit: (text: string) => string = (t) => t): Config {
  return parseConfig(edit(BASE), "keelson.toml");
}

/** The BASE text without its [bgp] table and peers. */
function withoutBgp(text: string): string {
  return text.replace(/\[bgp\][^]*?\n\n\[\[pools\]\]/, "[[pools]]");
}

/** Inserts `lines` at the top of table `[name]`, creating the table when absent. */
function set(name: string, lines: string): (text: string) => string {
  return (text) =>
    text.includes(`\n[${name}]\n`)
      ? text.replace(`\n[${name}]\n`, `\n[${name}]\n${lines}\n`)
      : `[${name}]\n${lines}\n${text}`;
}

Deno.test("pendingRestart() names each start-only setting the file changed, with both values", () => {
  const cases: { what: string; edit: (t: string) => string; host?: string; want: string[] }[] = [
    { what: "nothing changed", edit: (t) => t, want: [] },
    {
      what: "reloadable settings only",
      edit: (t) =>
        set("node_lifecycle", "dry_run = true")(t).replace('"192.0.2.0/28"', '"192.0.2.0/27"'),
      want: [],
    },
    {
      what: "[bgp] socket",
      edit: set("bgp", 'socket = "/run/bird2/bird.ctl"'),
      want: ["[bgp] socket /run/bird/bird.ctl -> /run/bird2/bird.ctl"],
    },
    {
      what: "[bgp] socket on a host without BIRD",
      edit: set("bgp", 'socket = "/run/bird2/bird.ctl"'),
      host: "w-1",
      want: [],
    },
    {
      what: "[bgp] config_file and check_command",
      edit: set("bgp", 'config_file = "/etc/bird/k.conf"\ncheck_command = ["bird", "-p", "-c"]'),
      want: ["[bgp] config_file /etc/keelson/bird/keelson.conf -> /etc/bird/k.conf"],
    },
    {
      what: "[bgp] removed: BIRD no longer wanted, its paths not compared",
      edit: withoutBgp,
      want: ["BIRD on this host ([bgp], machine role) true -> false"],
    },
    {
      what: "this host becomes a worker",
      edit: (t) => t.replace('role = "control-plane"', 'role = "worker"'),
      want: [
        "keepalived on this host ([keepalived] enabled, machine role) true -> false",
        "BIRD on this host ([bgp], machine role) true -> false",
      ],
    },
    {
      what: "a VRRP pool's served_by selects this worker: host-side mode and keepalived",
      edit: (t) =>
        t.replace('"192.0.2.0/28"]\n', '"192.0.2.0/28"]\nserved_by = { machines = ["w-1"] }\n'),
      host: "w-1",
      want: [
        "controllers and leader election on this host (machine role, [pools.served_by]) full -> " +
        "host-side",
        "keepalived on this host ([keepalived] enabled, machine role) false -> true",
      ],
    },
    {
      what: "keepalived file paths",
      edit: set("keepalived", 'config_file = "/etc/keepalived/k.conf"\npid_file = "/run/k.pid"'),
      want: [
        "[keepalived] config_file /etc/keepalived/conf.d/keelson.conf -> " +
        "/etc/keepalived/k.conf",
        "[keepalived] pid_file /run/keepalived.pid -> /run/k.pid",
      ],
    },
    {
      what: "keepalived turned off",
      edit: set("keepalived", "enabled = false"),
      want: ["keepalived on this host ([keepalived] enabled, machine role) true -> false"],
    },
    {
      what: "[server], [kubernetes], [leader_election], [controllers], [cluster] name",
      edit: (t) =>
        [
          set("server", 'listen = "127.0.0.1:10300"'),
          set("kubernetes", 'kubeconfig = "/etc/keelson/kc"\nqps = 50'),
          set("leader_election", 'lease_duration = "20s"'),
          set("controllers", 'enabled = ["*", "-route"]'),
        ].reduce((text, f) => f(text), t).replace('name = "dc1"', 'name = "dc2"'),
      want: [
        "[cluster] name dc1 -> dc2",
        "[kubernetes] kubeconfig (unset) -> /etc/keelson/kc",
        "[kubernetes] qps 20 -> 50",
        "[leader_election] lease_duration 15s -> 20s",
        "[server] listen 127.0.0.1:10258 -> 127.0.0.1:10300",
        '[controllers] enabled ["*"] -> ["*","-route"]',
      ],
    },
    {
      // the running process would behave the same: compared by milliseconds, not by text
      what: "a duration written differently but equal",
      edit: set("leader_election", 'lease_duration = "15000ms"'),
      want: [],
    },
    {
      what: "a duration changed: shown as written",
      edit: set("control_plane", 'health_interval = "1.5s"'),
      want: ["[control_plane] health_interval 1s -> 1.5s"],
    },
    {
      what: "[server] metrics_token_file is re-read, not start-only",
      edit: set("server", 'metrics_token_file = "/etc/keelson/token"'),
      want: [],
    },
    {
      what: "a pod_cidrs peer added: the route controller starts only at start",
      edit: (t) =>
        t.replace("asn = 64512\n", 'asn = 64512\npod_cidrs = true\nsubnet = "10.0.0.0/24"\n'),
      want: ["route controller ([[bgp.peers]] pod_cidrs) false -> true"],
    },
    {
      what: "control-plane VIP switched to BGP",
      edit: set("control_plane", 'announce = "bgp"'),
      want: ["[control_plane] announce vrrp -> bgp"],
    },
    {
      what: "control-plane VIP removed: applies at once",
      edit: (t) => t.replace('vip = ["10.0.0.10"]', "vip = []"),
      want: [],
    },
  ];
  for (const c of cases) {
    const got = pendingRestart(config(), config(c.edit), c.host ?? "cp-1")
      .map((p) => `${p.name} ${p.was} -> ${p.now}`);
    assert.deepEqual(got, c.want, c.what);
  }
});

Deno.test("pendingRestart(): a control-plane VIP added needs the probe started at start", () => {
  const none = config((t) => t.replace('vip = ["10.0.0.10"]', "vip = []"));
  assert.deepEqual(
    pendingRestart(none, config(), "cp-1").map((p) => p.name),
    ["[control_plane] vip (none to some)"],
  );
});

Deno.test("pendingRestart(): [bgp] added where no BIRD was started is a restart, nothing else", () => {
  const noBgp = config(withoutBgp);
  assert.deepEqual(
    pendingRestart(noBgp, config(), "cp-1").map((p) => `${p.name} ${p.was} -> ${p.now}`),
    ["BIRD on this host ([bgp], machine role) false -> true"],
  );
});

Deno.test("pinStartOnly() keeps the start values of start-only keys and takes everything else", () => {
  const running = config();
  const next = config((t) =>
    [
      set(
        "bgp",
        'socket = "/run/bird2/bird.ctl"\nconfig_file = "/etc/bird/k.conf"\nhold_time = 30',
      ),
      set("keepalived", 'config_file = "/etc/keepalived/k.conf"'),
      (text: string) => text.replace('interface = "eth0"', 'interface = "bond0"'),
      set("kubernetes", 'kubeconfig = "/etc/keelson/kc"'),
      set("server", 'listen = "127.0.0.1:10300"\nmetrics_token_file = "/etc/keelson/token"'),
    ].reduce((text, f) => f(text), t)
  );
  const pinned = pinStartOnly(next, running);
  assert.equal(pinned.bgp?.socket, "/run/bird/bird.ctl");
  assert.equal(pinned.bgp?.config_file, "/etc/keelson/bird/keelson.conf");
  assert.equal(pinned.bgp?.hold_time, 30, "reloadable [bgp] keys follow the file");
  assert.equal(pinned.keepalived.config_file, "/etc/keepalived/conf.d/keelson.conf");
  assert.equal(pinned.keepalived.interface, "bond0");
  assert.equal("kubeconfig" in pinned.kubernetes, false, "an unset start value stays unset");
  assert.equal(pinned.server.listen, "127.0.0.1:10258");
  assert.equal(pinned.server.metrics_token_file, "/etc/keelson/token");
  assert.equal(pinned.pools, next.pools, "unpinned tables are shared, not copied");
  assert.equal(next.bgp?.socket, "/run/bird2/bird.ctl", "the reloaded config is not modified");
  assert.deepEqual(pendingRestart(running, pinned, "cp-1"), [], "nothing left to restart for");
});

Deno.test("pinStartOnly(): [keepalived] enabled = false reaches the running parts (the announcer withdraws)", () => {
  const pinned = pinStartOnly(config(set("keepalived", "enabled = false")), config());
  assert.equal(pinned.keepalived.enabled, false);
  assert.equal(pinned.keepalived.config_file, "/etc/keepalived/conf.d/keelson.conf");
  assert.deepEqual(
    pendingRestart(config(), pinned, "cp-1").map((p) => p.name),
    ["keepalived on this host ([keepalived] enabled, machine role)"],
    "still a restart: keepalived's side stops only then",
  );
});

Deno.test("pinStartOnly(): [bgp] added or removed is left as the file has it", () => {
  const withBgp = config();
  const noBgp = config(withoutBgp);
  assert.equal(noBgp.bgp, undefined);
  assert.equal(pinStartOnly(noBgp, withBgp).bgp, undefined);
  assert.equal(pinStartOnly(withBgp, noBgp).bgp?.socket, "/run/bird/bird.ctl");
});

Deno.test("every start-only setting's name fits a heartbeat report and no secret is among them", () => {
  const names = START_ONLY_SETTINGS.map((s) => s.name);
  assert.equal(new Set(names).size, names.length, "names are unique");
  const r = report("cp-1", []);
  const withRestart = { ...r, reload: { ...r.reload, restart: names } };
  assert.deepEqual(decodeHostReport(encodeHostReport(withRestart)), withRestart);
  for (const name of names) {
    // values are logged: a key holding a secret itself (not a file naming it) must never be listed
    assert.doesNotMatch(name, /password|token|secret|key(?!_file)/i, name);
  }
});
