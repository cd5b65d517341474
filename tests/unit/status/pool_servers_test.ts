import assert from "node:assert/strict";
import fc from "fast-check";
import { parseConfig } from "../../../src/config/parse_config.ts";
import { poolServers } from "../../../src/config/pool_serving.ts";
import {
  describeHosts,
  poolServersOf,
  servingNow,
  unservedPoolProblems,
  vipServingProblems,
} from "../../../src/status/pool_servers.ts";

const INVENTORY = `
[[pools]]
name = "edge"
addresses = ["192.0.2.0/29"]
[pools.served_by]
roles = ["worker"]

[[pools]]
name = "lan"
addresses = ["192.0.2.8/29"]

[[machines]]
name = "cp-1"
role = "control-plane"
internal_ips = ["10.0.0.11"]

[[machines]]
name = "w-1"
internal_ips = ["10.0.0.21"]

[[machines]]
name = "w-2"
state = "maintenance"
internal_ips = ["10.0.0.22"]

[[machines]]
name = "w-3"
state = "retired"
internal_ips = ["10.0.0.23"]
`;

const config = parseConfig(INVENTORY, "keelson.toml");

function node(name: string, ready?: string): unknown {
  return {
    metadata: { name },
    status: { conditions: ready === undefined ? [] : [{ type: "Ready", status: ready }] },
  };
}

Deno.test("poolServersOf() lists each pool's selected machines with why each can or cannot serve", () => {
  const pools = poolServersOf(config, [node("cp-1", "True"), node("w-1", "False")]);
  assert.deepEqual(pools.map((p) => [p.pool, p.announce, p.selection]), [
    ["edge", "vrrp", "served_by"],
    ["lan", "vrrp", "default"],
  ]);
  assert.deepEqual(pools[0]!.hosts, [
    { host: "w-1", state: "node-not-ready", node: "False" },
    { host: "w-2", state: "maintenance", node: "absent" },
    { host: "w-3", state: "retired", node: "absent" },
  ]);
  assert.deepEqual(pools[1]!.hosts, [{ host: "cp-1", state: "serving", node: "True" }]);
  assert.equal(
    describeHosts(pools[0]!.hosts),
    "w-1 (Node not Ready), w-2 (in maintenance), w-3 (retired)",
  );
});

Deno.test("poolServersOf() without Nodes: readiness unread, only the inventory's states count", () => {
  const [edge] = poolServersOf(config, undefined);
  assert.deepEqual(servingNow(edge!), ["w-1"]);
  assert.equal(edge!.hosts[0]!.node, "unread");
});

Deno.test("unservedPoolProblems(): a pool whose selected machines are all NotReady, in maintenance or retired", () => {
  const problems = unservedPoolProblems(poolServersOf(config, [node("w-1", "Unknown")]));
  assert.deepEqual(problems, [
    "pool edge: no machine can serve it (w-1 (Node not Ready), w-2 (in maintenance), w-3 (retired))",
  ]);
  assert.deepEqual(unservedPoolProblems(poolServersOf(config, [node("w-1", "True")])), []);
  // keepalived off: Keelson announces no VRRP pool, so none is unserved by it
  const off = parseConfig(`[keepalived]\nenabled = false\n${INVENTORY}`, "keelson.toml");
  assert.deepEqual(unservedPoolProblems(poolServersOf(off, [node("w-1", "Unknown")])), []);
});

Deno.test("vipServingProblems(): a Service VIP held only by hosts that do not serve its pool", () => {
  const pools = poolServersOf(config, [node("w-1", "True")]);
  const row = (hosts: string[], bgpHosts: string[] = [], pool = "edge") => ({
    vip: "192.0.2.1",
    services: ["shop/web"],
    pool,
    hosts,
    bgpHosts,
  });
  assert.deepEqual(vipServingProblems(pools, [row(["w-1"])]), []);
  assert.deepEqual(vipServingProblems(pools, [row([])]), [], "no holder: status's own problem");
  assert.deepEqual(vipServingProblems(pools, [row(["cp-1"])]), [
    "VIP 192.0.2.1 (shop/web) of pool edge is served by cp-1, none of which serves the pool " +
    "(its serving hosts: w-1)",
  ]);
  // w-2 is in maintenance but the pool's: whether it should still hold it is the host side's call
  assert.deepEqual(vipServingProblems(pools, [row([], ["w-2"])]), []);
  // w-3 is retired: it serves no pool
  assert.equal(vipServingProblems(pools, [row(["w-3"])]).length, 1);
  // no Service, or a pool the inventory lacks: nothing judged here
  assert.deepEqual(vipServingProblems(pools, [{ ...row(["cp-1"]), services: [] }]), []);
  assert.deepEqual(vipServingProblems(pools, [row(["cp-1"], [], "gone")]), []);
});

Deno.test("poolServersOf() reads hostile Node lists without throwing", () => {
  fc.assert(fc.property(fc.array(fc.anything(), { maxLength: 8 }), (nodes) => {
    const pools = poolServersOf(config, nodes);
    assert.equal(pools.length, 2);
  }));
});

Deno.test("property: the hosts that serve now are exactly poolServers' less maintenance, shut down and NotReady ones", () => {
  const machineArb = fc.record({
    role: fc.constantFrom("control-plane", "worker"),
    state: fc.constantFrom("active", "maintenance", "shutdown", "retired"),
    rack: fc.constantFrom("a", "b"),
    ready: fc.constantFrom("True", "False", "Unknown", undefined, "none"),
  });
  // check refuses a selection that matches no machine: one machine of rack a at least
  const machinesArb = fc.array(machineArb, { minLength: 1, maxLength: 6 })
    .filter((ms) => ms.some((m) => m.rack === "a"));
  fc.assert(fc.property(machinesArb, (machines) => {
    const text =
      '[keepalived]\nenabled = false\n[[pools]]\nname = "p"\naddresses = ["192.0.2.0/29"]\n' +
      '[pools.served_by]\nlabels = { "example.com/rack" = "a" }\n' +
      machines.map((m, i) =>
        `[[machines]]\nname = "m-${i}"\nrole = "${m.role}"\nstate = "${m.state}"\n` +
        `labels = { "example.com/rack" = "${m.rack}" }\n`
      ).join("");
    const parsed = parseConfig(text, "keelson.toml");
    const nodes = machines.flatMap((m, i) => m.ready === "none" ? [] : [node(`m-${i}`, m.ready)]);
    const [pool] = poolServersOf(parsed, nodes);
    const expected = poolServers(parsed, parsed.pools[0]!).filter((m, _) => {
      const i = Number(m.name.slice(2));
      const ready = machines[i]!.ready;
      return m.state === "active" && ready !== "False" && ready !== "Unknown";
    }).map((m) => m.name).sort();
    assert.deepEqual(servingNow(pool!), expected);
    assert.ok(pool!.hosts.every((h) => machines[Number(h.host.slice(2))]!.rack === "a"));
  }));
});
