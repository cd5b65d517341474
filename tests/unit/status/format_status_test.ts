// deno-lint-ignore-file no-control-regex -- the tests look for ANSI colour codes
import assert from "node:assert/strict";
import { formatStatusJson, formatStatusText, table } from "../../../src/status/format_status.ts";
import {
  bgpReport,
  heartbeatLease,
  lbService,
  leaderLease,
  NOW,
  report,
  statusOf,
} from "./_leases.ts";

const ALL = ["10.0.0.150", "10.0.0.151"];

function healthy() {
  return statusOf({
    services: [lbService("shop", "web", ["10.0.0.150"]), lbService("shop", "api", ["10.0.0.151"])],
    leases: [
      heartbeatLease(
        "cp-1",
        report("cp-1", ["10.0.0.150"], {
          all: ALL,
          pools: [{ pool: "lan", family: "IPv4", total: 10, used: 2 }],
        }),
      ),
      heartbeatLease("cp-2", report("cp-2", ["10.0.0.151"], { all: ALL })),
    ],
    leaderLease: leaderLease("cp-1_abc"),
    nowMs: NOW,
  });
}

Deno.test("formatStatusText(): a healthy cluster at a glance, without colour codes when off", () => {
  const text = formatStatusText(healthy(), { color: false });
  assert.equal(
    text,
    [
      "Leader: cp-1_abc",
      "Healthy: every VIP is served by exactly one host.",
      "",
      "VIPs",
      "  VIP         SERVICE   POOL  SERVED BY  STATES                     SINCE",
      "  10.0.0.150  shop/web  lan   cp-1       cp-1=holding cp-2=standby  2m00s",
      "  10.0.0.151  shop/api  lan   cp-2       cp-1=standby cp-2=holding  2m00s",
      "",
      "Hosts",
      "  HOST  HEARTBEAT  VERSION  CONFIG  APPLIED             VIPS",
      "  cp-1  1s ago     0.1.0    ok      keepalived=success  1",
      "  cp-2  1s ago     0.1.0    ok      keepalived=success  1",
      "",
      "Pools",
      "  POOL  FAMILY  USED  TOTAL  FREE  USE",
      "  lan   IPv4    2     10     8     20%",
      "",
    ].join("\n"),
  );
  assert.doesNotMatch(text, /\x1b/);
});

Deno.test("formatStatusText(): problems in red when colours are on, listed first", () => {
  const status = statusOf({
    services: [lbService("shop", "web", ["10.0.0.150"])],
    leases: [
      heartbeatLease("cp-1", report("cp-1", ["10.0.0.150"])),
      heartbeatLease("cp-2", report("cp-2", ["10.0.0.150"])),
    ],
    leaderLease: leaderLease("cp-1_abc"),
    nowMs: NOW,
  });
  const text = formatStatusText(status, { color: true });
  const lines = text.split("\n");
  assert.equal(lines[1], "\x1b[31m1 problem(s):\x1b[0m");
  assert.match(lines[2]!, /^\x1b\[31m {2}! VIP 10\.0\.0\.150 \(shop\/web\) is served by 2 hosts/);
  assert.match(text, /\x1b\[31mSPLIT BRAIN: cp-1,cp-2\x1b\[0m/);
  // colour codes do not shift the columns
  const plain = formatStatusText(status, { color: false }).split("\n");
  const strip = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, "");
  assert.deepEqual(lines.map(strip), plain);
});

Deno.test("formatStatusText(): retired hosts apart and dimmed, with the command that deletes their heartbeat; none, no section", () => {
  const status = statusOf({
    services: [lbService("shop", "web", ["10.0.0.150"])],
    leases: [
      heartbeatLease("cp-1", report("cp-1", ["10.0.0.150"])),
      heartbeatLease("cp-9", report("cp-9", ["10.0.0.150"]), 7_200_000),
    ],
    leaderLease: leaderLease("cp-1_abc"),
    nowMs: NOW,
    inventory: new Set(["cp-1"]),
  });
  const plain = formatStatusText(status, { color: false });
  assert.match(plain, /^Healthy: /m);
  assert.match(
    plain,
    new RegExp(
      [
        "Retired hosts \\(not in the inventory, silent\\)",
        "  HOST  LAST HEARTBEAT \\(ITS CLOCK\\)  DELETE ITS HEARTBEAT WITH",
        "  cp-9  2h00m ago                   kubectl -n kube-system delete lease keelson-host-cp-9",
        "",
        "Pools",
      ].join("\n"),
    ),
  );
  assert.doesNotMatch(plain.split("Retired hosts")[0]!, /cp-9/);
  const coloured = formatStatusText(status, { color: true });
  assert.match(coloured, /\x1b\[2mcp-9\x1b\[0m/);
  assert.doesNotMatch(coloured, /\x1b\[31m/);
  assert.doesNotMatch(formatStatusText(healthy(), { color: false }), /Retired/);
});

Deno.test("formatStatusJson() is the model itself", () => {
  const status = healthy();
  assert.deepEqual(JSON.parse(formatStatusJson(status)), JSON.parse(JSON.stringify(status)));
});

Deno.test("table() says (none) for no rows", () => {
  assert.deepEqual(table(["A"], []), ["  (none)"]);
});

Deno.test("formatStatusText(): BGP columns show the announcing hosts and each host's sessions", () => {
  const status = statusOf({
    services: [lbService("shop", "web", ["10.0.30.10"], "bgp")],
    leases: [
      heartbeatLease("cp-1", {
        ...report("cp-1", []),
        bgp: [{ peer: "tor-a", established: true, routes: ["10.0.30.10/32"] }],
      }),
      heartbeatLease("cp-2", {
        ...report("cp-2", []),
        bgp: [{ peer: "tor-a", established: false, routes: ["10.0.30.10/32"] }],
      }),
    ],
    leaderLease: leaderLease("cp-1_abc"),
    nowMs: NOW,
  });
  const text = formatStatusText(status, { color: false });
  assert.match(text, /BGP \(ECMP\)/);
  assert.match(text, /10\.0\.30\.10 +shop\/web +bgp +- +- +cp-1 /);
  assert.match(text, /cp-1 .* tor-a=up\(1\)\n/);
  assert.match(text, /cp-2 .* tor-a=DOWN \(ALL DOWN\)\n/);
  assert.match(text, /host cp-2: every BGP session is down/);
});

Deno.test("formatStatusText(): a BGP VIP two hosts hold shows both states and both hosts, healthy", () => {
  const status = statusOf({
    services: [lbService("shop", "web", ["10.0.30.10"], "bgp")],
    leases: [
      heartbeatLease("cp-1", bgpReport("cp-1", ["10.0.30.10"])),
      heartbeatLease("cp-2", bgpReport("cp-2", ["10.0.30.10"])),
    ],
    leaderLease: leaderLease("cp-1_abc"),
    nowMs: NOW,
  });
  const text = formatStatusText(status, { color: false });
  assert.match(text, /\nHealthy: every VIP is served \(over VRRP by exactly one host\)\.\n/);
  assert.match(
    text,
    /\n {2}10\.0\.30\.10 +shop\/web +bgp +- +cp-1=holding cp-2=holding +cp-1,cp-2 +- *\n/,
  );
  assert.doesNotMatch(text, /SPLIT BRAIN/);
  assert.match(text, /\n {2}cp-1 .* bird=success .* tor-a=up\(1\)\n/);
});

Deno.test("formatStatusText(): a host whose file changed start-only settings says restart required, in yellow, without counting as a problem", () => {
  const pending = report("cp-2", ["10.0.0.151"], { all: ALL });
  pending.reload.restart = ["[bgp] socket", "[server] listen"];
  const failed = report("cp-3", [], { all: ALL, reloadOk: false });
  failed.reload.restart = ["[bgp] socket"];
  const status = statusOf({
    services: [lbService("shop", "web", ["10.0.0.150"]), lbService("shop", "api", ["10.0.0.151"])],
    leases: [
      heartbeatLease("cp-1", report("cp-1", ["10.0.0.150"], { all: ALL })),
      heartbeatLease("cp-2", pending),
      heartbeatLease("cp-3", failed),
    ],
    leaderLease: leaderLease("cp-1_abc"),
    nowMs: NOW,
  });
  const text = formatStatusText(status, { color: false });
  assert.match(text, /\n {2}cp-1 +1s ago +0\.1\.0 +ok +keepalived=success/);
  assert.match(
    text,
    /\n {2}cp-2 +1s ago +0\.1\.0 +restart required: \[bgp\] socket, \[server\] listen +keepalived=success/,
  );
  assert.match(
    text,
    /\n {2}cp-3 +1s ago +0\.1\.0 +reload failed; restart required: \[bgp\] socket +keepalived=success/,
  );
  assert.deepEqual(status.problems, ["host cp-3: the last configuration reload failed"]);
  const colored = formatStatusText(status, { color: true });
  assert.match(colored, /\x1b\[33mrestart required: \[bgp\] socket, \[server\] listen\x1b\[0m/);
  // the JSON model carries the names as the host reported them
  const json = JSON.parse(formatStatusJson(status));
  assert.deepEqual(
    json.hosts.find((h: { host: string }) => h.host === "cp-2").reload.restart,
    ["[bgp] socket", "[server] listen"],
  );
});
