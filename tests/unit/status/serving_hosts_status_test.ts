import assert from "node:assert/strict";
import { parseConfig } from "../../../src/config/parse_config.ts";
import { formatStatusJson, formatStatusText } from "../../../src/status/format_status.ts";
import { poolServersOf } from "../../../src/status/pool_servers.ts";
import { heartbeatLease, lbService, leaderLease, NOW, report, statusOf } from "./_leases.ts";

const ALL = ["10.0.0.150", "10.0.0.151"];

const config = parseConfig(
  `
[[pools]]
name = "lan"
addresses = ["10.0.0.150-10.0.0.159"]
[pools.served_by]
roles = ["worker"]

[[pools]]
name = "cp"
addresses = ["10.0.0.160-10.0.0.169"]

[[machines]]
name = "cp-1"
role = "control-plane"
internal_ips = ["10.0.0.11"]

[[machines]]
name = "w-1"
internal_ips = ["10.0.0.21"]

[[machines]]
name = "w-2"
internal_ips = ["10.0.0.22"]
`,
  "keelson.toml",
);

const node = (name: string, ready: string) => ({
  metadata: { name },
  status: { conditions: [{ type: "Ready", status: ready }] },
});

function status(holder: string, nodes: unknown[] | undefined) {
  return statusOf({
    services: [lbService("shop", "web", ["10.0.0.150"])],
    leases: [
      heartbeatLease(holder, report(holder, ["10.0.0.150"], { all: ALL })),
      leaderLease("cp-1_abc"),
    ],
    leaderLease: leaderLease("cp-1_abc"),
    nowMs: NOW,
    servingHosts: poolServersOf(config, nodes),
  });
}

Deno.test("status: a Service VIP on a host outside its pool's serving hosts is a problem", () => {
  const wrong = status("cp-1", [node("w-1", "True"), node("w-2", "True")]);
  assert.ok(
    wrong.problems.includes(
      "VIP 10.0.0.150 (shop/web) of pool lan is served by cp-1, none of which serves the pool " +
        "(its serving hosts: w-1, w-2)",
    ),
    wrong.problems.join("\n"),
  );
  const right = status("w-1", [node("w-1", "True"), node("w-2", "True")]);
  assert.ok(!right.problems.some((p) => /none of which serves/.test(p)), right.problems.join("\n"));
});

Deno.test("status: a pool whose serving hosts' Nodes are all NotReady is a problem", () => {
  const s = status("w-1", [node("w-1", "False"), node("w-2", "Unknown")]);
  assert.ok(
    s.problems.includes(
      "pool lan: no machine can serve it (w-1 (Node not Ready), w-2 (Node not Ready))",
    ),
    s.problems.join("\n"),
  );
});

Deno.test("status: each pool's serving hosts in the text and JSON outputs; none without the inventory", () => {
  const s = status("w-1", [node("w-1", "True"), node("w-2", "False")]);
  const text = formatStatusText(s, { color: false });
  assert.match(
    text,
    /Serving hosts\n\s+POOL\s+ANNOUNCE\s+HOSTS\n\s+lan\s+VRRP\s+w-1, w-2 \(Node not Ready\)\n\s+cp\s+VRRP\s+cp-1/,
  );
  const json = JSON.parse(formatStatusJson(s));
  assert.deepEqual(json.servingHosts[0], {
    pool: "lan",
    announce: "vrrp",
    selection: "served_by",
    announced: true,
    hosts: [
      { host: "w-1", state: "serving", node: "True" },
      { host: "w-2", state: "node-not-ready", node: "False" },
    ],
  });
  const without = statusOf({
    services: [],
    leases: [leaderLease("cp-1_abc")],
    leaderLease: leaderLease("cp-1_abc"),
    nowMs: NOW,
  });
  assert.deepEqual(without.servingHosts, []);
  assert.doesNotMatch(formatStatusText(without, { color: false }), /Serving hosts/);
});
