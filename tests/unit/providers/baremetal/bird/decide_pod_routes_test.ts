import assert from "node:assert/strict";
import type { V1Node } from "@kubernetes/client-node";
import {
  decidePodRoutes,
  type PodRouteRefusal,
} from "../../../../../providers/baremetal/bird/decide_pod_routes.ts";
import { bgpConfig } from "./_inventory.ts";

function node(
  name: string,
  cidrs: string[],
  ips: string[] = [],
  extra: { providerID?: string; deleting?: boolean } = {},
): V1Node {
  return {
    metadata: {
      name,
      ...(extra.deleting ? { deletionTimestamp: new Date("2030-01-01T00:00:00Z") } : {}),
    },
    spec: { podCIDRs: cidrs, ...(extra.providerID ? { providerID: extra.providerID } : {}) },
    status: { addresses: ips.map((address) => ({ type: "InternalIP", address })) },
  };
}

/** Machines of the base inventory plus odd ones: several next hops, none usable, retired. */
const config = await bgpConfig((t) =>
  t + `
[[machines]]
name = "multi"
internal_ips = ["127.0.0.9", "10.0.0.41", "10.0.0.42"]

[[machines]]
name = "loop"
internal_ips = ["127.0.0.8"]

[[machines]]
name = "gone"
state = "retired"
internal_ips = ["10.0.0.43"]

[[machines]]
name = "srv-7"
id = "SN-7"
hostname = "srv-7.example"
internal_ips = ["10.0.0.44"]
`
);

Deno.test("decidePodRoutes(): each refusal kind, with the Node and CIDR as written", () => {
  const cases: [V1Node, PodRouteRefusal, RegExp][] = [
    [node("stranger", ["10.244.1.0/24"]), "no-machine", /not in the inventory/],
    [
      node("x", ["10.244.1.0/24"], [], { providerID: "other://w-1" }),
      "no-machine",
      /does not start with "baremetal:\/\/"/,
    ],
    [
      node("node-17", ["10.244.17.0/24"], ["10.0.0.44"]),
      "not-initialized",
      /matches machine "srv-7" only by an InternalIP it reports itself; .*baremetal:\/\/SN-7/,
    ],
    [node("gone", ["10.244.2.0/24"]), "machine-retired", /retired/],
    [node("w-b", ["10.244.3.1/24"]), "bad-cidr", /host bits are set/],
    [node("far", ["10.244.5.0/24", "10.244.6.0/24"]), "bad-cidr", /second IPv4 pod CIDR/],
    [node("cp-1", ["10.245.0.0/24"]), "outside-cluster-cidr", /outside \[cluster\] cluster_cidr/],
    [node("cp-2", ["10.244.0.0/16"]), "whole-cluster-cidr", /whole of \[cluster\] cluster_cidr/],
    [node("srv-7", ["fd00:244:7::/64"]), "no-next-hop", /no IPv6 address in internal_ips/],
    [node("loop", ["10.244.8.0/24"]), "bad-next-hop", /127\.0\.0\.8 .* loopback/],
  ];
  const decision = decidePodRoutes({ config, nodes: cases.map(([n]) => n) });
  for (const [n, kind, words] of cases) {
    const name = n.metadata!.name!;
    const refused = decision.refused.filter((r) => r.node === name);
    assert.ok(refused.length > 0, `${name} not refused`);
    const last = refused.at(-1)!;
    assert.equal(last.kind, kind, `${name}: ${last.reason}`);
    assert.match(last.reason, words, name);
    assert.equal(last.cidr, n.spec!.podCIDRs!.at(-1), `${name}: the CIDR as written`);
  }
  // far's first CIDR is fine; the second of the family is not
  assert.deepEqual(decision.announced.map((r) => `${r.node} ${r.cidr} ${r.nextHop}`), [
    "far 10.244.5.0/24 10.0.7.21",
  ]);
});

Deno.test("decidePodRoutes(): the next hop is the machine's, the one the Node reports first", () => {
  const decision = decidePodRoutes({
    config,
    nodes: [
      node("multi", ["10.244.9.0/24"], ["10.0.0.42", "127.0.0.9"]),
      node("w-1", ["10.244.1.0/24", "fd00:244:1::/64"], ["192.0.2.77", "::1"]),
      node("w-b", ["10.244.2.0/24"], [], { providerID: "baremetal://w-b" }),
      node("deleting", ["10.244.4.0/24"], [], { deleting: true }),
    ],
  });
  assert.deepEqual(decision.announced.map((r) => `${r.node} ${r.cidr} ${r.nextHop}`), [
    "multi 10.244.9.0/24 10.0.0.42",
    "w-1 10.244.1.0/24 10.0.0.21",
    "w-1 fd00:244:1::/64 fd00::21",
    "w-b 10.244.2.0/24 10.0.1.21",
  ]);
  assert.deepEqual(decision.refused, []);
});

Deno.test("decidePodRoutes(): a machine two Nodes resolve to, and overlapping CIDRs, are refused for each of them", () => {
  const decision = decidePodRoutes({
    config,
    nodes: [
      node("w-1", ["10.244.1.0/24"], [], { providerID: "baremetal://w-1" }),
      node("imposter", ["10.244.7.0/24"], [], { providerID: "baremetal://w-1" }),
      node("w-b", ["10.244.2.0/23"]),
      node("far", ["10.244.3.0/24"]),
      node("cp-1", ["10.244.2.0/25"]),
      node("cp-2", ["10.244.5.0/24"]),
    ],
  });
  const kinds = decision.refused.map((r) => `${r.node} ${r.kind}`);
  assert.deepEqual(kinds, [
    "cp-1 contested",
    "far contested",
    "imposter machine-contested",
    "w-1 machine-contested",
    "w-b contested",
  ]);
  assert.match(
    decision.refused.find((r) => r.node === "w-b")!.reason,
    /overlaps 10\.244\.2\.0\/25 of Node "cp-1", 10\.244\.3\.0\/24 of Node "far"/,
  );
  assert.deepEqual(decision.announced.map((r) => r.node), ["cp-2"]);
});

Deno.test("decidePodRoutes(): a machine whose providerID another Node holds is not found by name", () => {
  const decision = decidePodRoutes({
    config,
    nodes: [
      node("w-1", ["10.244.1.0/24"]),
      node("other", ["10.244.7.0/24"], [], { providerID: "baremetal://w-1" }),
    ],
  });
  // the providerID names the machine (as for the cloud-node controller): the next hop stays the
  // machine's own address, whichever Node holds it
  assert.deepEqual(decision.announced.map((r) => `${r.node} ${r.nextHop}`), ["other 10.0.0.21"]);
  assert.match(decision.refused[0]!.reason, /belongs to Node "other", which holds its providerID/);
});
