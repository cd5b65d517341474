import assert from "node:assert/strict";
import type { V1Node } from "@kubernetes/client-node";
import { bgpPeerReports } from "../../../../../providers/baremetal/bird/bgp_report.ts";
import { buildBirdModel } from "../../../../../providers/baremetal/bird/model.ts";
import { reportedRoutes } from "../../../../../providers/baremetal/bird/reported_routes.ts";
import type { BgpPeerReport } from "../../../../../src/status/host_report.ts";
import { heartbeatLease, judged, report } from "../../../status/_leases.ts";
import { bgpConfig } from "./_inventory.ts";

/** Rack A (row-a: cp-1, cp-2) peers with tor-a, rack B (row-b: cp-3) with tor-b. */
const perRack = () =>
  bgpConfig((t) =>
    t.replace(
      '[[bgp.peers]]\nname = "rr-1"',
      '[[bgp.peers]]\nname = "tor-b"\naddress = "10.0.1.1"\nasn = 64512\nzones = ["row-b"]\n' +
        'pod_cidrs = true\nsubnet = "10.0.1.0/24"\n\n[[bgp.peers]]\nname = "rr-1"',
    )
  );

function node(name: string, ip: string, cidr: string): V1Node {
  return {
    metadata: { name },
    spec: { podCIDRs: [cidr] },
    status: { addresses: [{ type: "InternalIP", address: ip }] },
  };
}

const NODE_A = node("w-1", "10.0.0.21", "10.244.1.0/24");
const NODE_B = node("w-b", "10.0.1.21", "10.244.2.0/24");
const NODES = [NODE_A, NODE_B];

/** What `host` publishes with its real model, its sessions up or down. */
async function hostBgp(host: string, up: boolean): Promise<BgpPeerReport[]> {
  const config = await perRack();
  const model = buildBirdModel({
    config,
    host,
    serviceVips: [],
    nodes: NODES,
  });
  if ("error" in model) throw new Error(model.error);
  return bgpPeerReports(model, { established: () => up });
}

Deno.test("reportedRoutes(): per-rack peers — a Node's route counts only when a host whose peer serves the Node's rack reports it", async () => {
  const config = await perRack();
  const cp1 = await hostBgp("cp-1", true); // the leader, rack A: only tor-a
  const cp3Up = await hostBgp("cp-3", true); // rack B: tor-b (and rr-1, multihop)
  const cp3Down = await hostBgp("cp-3", false);
  // cp-1's own BIRD never carries rack B's Node: the leader alone would say NoRouteCreated
  assert.deepEqual(cp1.map((p) => [p.peer, p.routes]), [["tor-a", ["10.244.1.0/24"]]]);
  const judge = (leases: [string, BgpPeerReport[], number][]) =>
    reportedRoutes({
      config,
      nodes: NODES,
      heartbeats: judged(
        leases.map(([host, bgp, age]) => heartbeatLease(host, { ...report(host, []), bgp }, age)),
      ),
    }).map((r) => `${r.targetNode} ${r.destinationCIDR}`).sort();

  const cases: [string, [string, BgpPeerReport[], number][], string[]][] = [
    ["rack B's host reports w-b's route", [["cp-1", cp1, 1000], ["cp-3", cp3Up, 1000]], [
      "w-1 10.244.1.0/24",
      "w-b 10.244.2.0/24",
    ]],
    ["nobody reports w-b's route", [["cp-1", cp1, 1000]], ["w-1 10.244.1.0/24"]],
    ["rack B's heartbeat is stale", [["cp-1", cp1, 1000], ["cp-3", cp3Up, 20_000]], [
      "w-1 10.244.1.0/24",
    ]],
    ["rack B's sessions are down", [["cp-1", cp1, 1000], ["cp-3", cp3Down, 1000]], [
      "w-1 10.244.1.0/24",
    ]],
    ["a peer not eligible for the Node's subnet does not count", [
      ["cp-1", [{ peer: "tor-a", established: true, routes: ["10.244.2.0/24"] }], 1000],
    ], []],
    ["no heartbeat at all", [], []],
  ];
  for (const [what, leases, expected] of cases) assert.deepEqual(judge(leases), expected, what);
});

Deno.test("reportedRoutes(): a Node outside the inventory claiming a reported CIDR is never judged routed", async () => {
  const config = await perRack();
  const cp1 = await hostBgp("cp-1", true);
  const intruder = node("intruder", "10.0.0.2", "10.244.1.0/24");
  const routes = reportedRoutes({
    config,
    nodes: [...NODES, intruder],
    heartbeats: judged([heartbeatLease("cp-1", { ...report("cp-1", []), bgp: cp1 }, 1000)]),
  }).map((r) => `${r.targetNode} ${r.destinationCIDR}`);
  assert.deepEqual(routes, ["w-1 10.244.1.0/24"]);
});
