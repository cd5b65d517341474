import assert from "node:assert/strict";
import { bgpPeerReports } from "../../../../../providers/baremetal/bird/bgp_report.ts";
import { buildBirdModel } from "../../../../../providers/baremetal/bird/model.ts";
import { HostReportSchema } from "../../../../../src/status/host_report.ts";
import { bgpConfig } from "./_inventory.ts";

const NODES = [{
  metadata: { name: "w-1" },
  spec: { podCIDRs: ["10.244.1.0/24"] },
  status: { addresses: [{ type: "InternalIP", address: "10.0.0.21" }] },
}];

Deno.test("bgpPeerReports(): per peer its session state and the prefixes exported to it", async () => {
  const config = await bgpConfig();
  const model = buildBirdModel({
    config,
    host: "cp-1",
    serviceVips: ["198.51.100.1"],
    nodes: NODES,
  });
  if ("error" in model) throw new Error(model.error);
  assert.deepEqual(bgpPeerReports(undefined, { established: () => true }), []);
  // cp-1 peers with tor-a only (rr-1 serves cp-3); tor-a receives the BGP pool and pod CIDRs
  const reports = bgpPeerReports(model, { established: (peer) => peer === "tor-a" });
  assert.deepEqual(reports, [
    { peer: "tor-a", established: true, routes: ["10.244.1.0/24", "198.51.100.1/32"] },
  ]);
  assert.equal(bgpPeerReports(model, { established: () => false })[0]!.established, false);
  // what a host publishes passes the schema readers apply
  const parsed = HostReportSchema.shape.bgp.safeParse(reports);
  assert.ok(parsed.success);
});
