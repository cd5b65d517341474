import assert from "node:assert/strict";
import fc from "fast-check";
import { localTrafficHosts } from "../../../../providers/baremetal/local_traffic.ts";
import { MAX_ENDPOINTS_PER_SLICE } from "../../../../src/kube/endpoint_nodes.ts";

function service(policy: string | undefined, name = "web", namespace = "shop"): unknown {
  return {
    metadata: { name, namespace },
    spec: {
      type: "LoadBalancer",
      ...(policy === undefined ? {} : { externalTrafficPolicy: policy }),
    },
  };
}

interface EndpointSpec {
  node: string;
  ready?: boolean | null;
  serving?: boolean;
  terminating?: boolean;
}

function slice(endpoints: EndpointSpec[], serviceName = "web", namespace = "shop"): unknown {
  return {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      name: `${serviceName}-abc`,
      namespace,
      labels: { "kubernetes.io/service-name": serviceName },
    },
    addressType: "IPv4",
    endpoints: endpoints.map((e) => ({
      addresses: ["10.244.0.5"],
      nodeName: e.node,
      conditions: {
        ...(e.ready === undefined ? {} : { ready: e.ready }),
        ...(e.serving === undefined ? {} : { serving: e.serving }),
        ...(e.terminating === undefined ? {} : { terminating: e.terminating }),
      },
    })),
  };
}

function node(name: string, ready: "True" | "False" | "Unknown" | undefined): unknown {
  return {
    metadata: { name },
    status: { conditions: ready === undefined ? [] : [{ type: "Ready", status: ready }] },
  };
}

const WORKERS = ["w-2", "w-1", "w-3"];

Deno.test("Cluster policy: every serving host, sorted, whatever the endpoints", () => {
  for (const policy of [undefined, "Cluster", "local", "Bogus"]) {
    const decision = localTrafficHosts({
      service: service(policy),
      endpointSlices: [slice([{ node: "w-1" }])],
      nodes: [],
      servingHosts: WORKERS,
    });
    assert.equal(decision.policy, "Cluster", String(policy));
    assert.deepEqual(decision.hosts, ["w-1", "w-2", "w-3"]);
    assert.deepEqual(decision.excluded, []);
    assert.equal(decision.endpointsKnown, true);
  }
});

Deno.test("Local policy: only serving hosts with a ready local endpoint, a reason for each other", () => {
  const decision = localTrafficHosts({
    service: service("Local"),
    endpointSlices: [
      slice([{ node: "w-1", ready: true }, { node: "w-2", ready: false }]),
      slice([{ node: "w-3", ready: false, serving: true, terminating: true }]),
      slice([{ node: "cp-1", ready: true }]),
    ],
    nodes: [node("w-1", "True"), node("w-2", "True"), node("w-3", "True")],
    servingHosts: WORKERS,
  });
  assert.equal(decision.policy, "Local");
  assert.deepEqual(decision.hosts, ["w-1"]);
  assert.deepEqual(decision.excluded.map((e) => [e.host, e.reason]), [
    ["w-2", "local-endpoints-not-ready"],
    ["w-3", "local-endpoints-terminating"],
  ]);
  assert.match(decision.excluded[0]!.message, /endpoints on "w-2" are not ready/);
});

Deno.test("Local policy: a host with no endpoint at all is excluded as such", () => {
  const decision = localTrafficHosts({
    service: service("Local"),
    endpointSlices: [slice([{ node: "w-1" }])],
    nodes: [],
    servingHosts: ["w-1", "w-2"],
  });
  assert.deepEqual(decision.hosts, ["w-1"], "ready absent counts as ready");
  assert.deepEqual(decision.excluded.map((e) => e.reason), ["no-local-endpoint"]);
});

Deno.test("Local policy: one ready endpoint on a host is enough next to unready ones", () => {
  const decision = localTrafficHosts({
    service: service("Local"),
    endpointSlices: [
      slice([{ node: "w-1", ready: false }, { node: "w-1", terminating: true, ready: false }]),
      slice([{ node: "w-1", ready: true }]),
    ],
    nodes: [],
    servingHosts: ["w-1"],
  });
  assert.deepEqual(decision.hosts, ["w-1"]);
});

Deno.test("Local policy: endpoints move, the decision follows", () => {
  const input = {
    service: service("Local"),
    nodes: [],
    servingHosts: ["w-1", "w-2"],
  };
  const before = localTrafficHosts({ ...input, endpointSlices: [slice([{ node: "w-1" }])] });
  const after = localTrafficHosts({ ...input, endpointSlices: [slice([{ node: "w-2" }])] });
  assert.deepEqual(before.hosts, ["w-1"]);
  assert.deepEqual(after.hosts, ["w-2"]);
});

Deno.test("Local policy: slices of another Service, namespace, kind or address type do not count", () => {
  const foreign = [
    slice([{ node: "w-1" }], "api"),
    slice([{ node: "w-1" }], "web", "other"),
    { ...(slice([{ node: "w-1" }]) as object), kind: "Endpoints" },
    { ...(slice([{ node: "w-1" }]) as object), apiVersion: "discovery.k8s.io/v1beta1" },
    { ...(slice([{ node: "w-1" }]) as object), addressType: "FQDN" },
  ];
  const decision = localTrafficHosts({
    service: service("Local"),
    endpointSlices: foreign,
    nodes: [],
    servingHosts: ["w-1"],
  });
  assert.deepEqual(decision.hosts, []);
  assert.deepEqual(decision.excluded.map((e) => e.reason), ["no-local-endpoint"]);
});

Deno.test("Local policy with unknown EndpointSlices: no verdict, every Ready host as for Cluster", () => {
  const decision = localTrafficHosts({
    service: service("Local"),
    endpointSlices: undefined,
    nodes: [node("w-2", "False")],
    servingHosts: ["w-1", "w-2"],
  });
  assert.equal(decision.policy, "Local");
  assert.equal(decision.endpointsKnown, false);
  assert.deepEqual(decision.hosts, ["w-1"]);
  assert.deepEqual(decision.excluded.map((e) => [e.host, e.reason]), [["w-2", "node-not-ready"]]);
});

Deno.test("a NotReady or Unknown Node serves nothing under either policy; no Node or no condition counts as Ready", () => {
  for (const policy of ["Cluster", "Local"]) {
    const decision = localTrafficHosts({
      service: service(policy),
      endpointSlices: [slice([{ node: "w-1" }, { node: "w-2" }, { node: "w-3" }, { node: "w-4" }])],
      nodes: [node("w-1", "False"), node("w-2", "Unknown"), node("w-3", undefined)],
      servingHosts: ["w-1", "w-2", "w-3", "w-4"],
    });
    assert.deepEqual(decision.hosts, ["w-3", "w-4"], policy);
    assert.deepEqual(
      decision.excluded.map((e) => e.reason),
      ["node-not-ready", "node-not-ready"],
      policy,
    );
  }
});

Deno.test("endpoints past the per-slice bound are not read", () => {
  const many = Array.from(
    { length: MAX_ENDPOINTS_PER_SLICE },
    () => ({ node: "w-1", ready: false }),
  );
  const decision = localTrafficHosts({
    service: service("Local"),
    endpointSlices: [slice([...many, { node: "w-2", ready: true }])],
    nodes: [],
    servingHosts: ["w-1", "w-2"],
  });
  assert.deepEqual(decision.hosts, []);
});

Deno.test("hostile shapes: a Service that cannot be read is Cluster; bad names and shapes are skipped", () => {
  const unreadable = localTrafficHosts({
    service: { kind: "ConfigMap", metadata: { name: "web", namespace: "shop" } },
    endpointSlices: [],
    nodes: [],
    servingHosts: ["w-1"],
  });
  assert.equal(unreadable.policy, "Cluster");
  assert.deepEqual(unreadable.hosts, ["w-1"]);

  const decision = localTrafficHosts({
    service: service("Local"),
    endpointSlices: [
      null,
      "slice",
      { ...(slice([]) as object), endpoints: "many" },
      slice([{ node: "W-1\u001b[31m" }, { node: "x".repeat(300) }]),
      {
        ...(slice([]) as object),
        endpoints: [null, 3, { nodeName: 7 }, { nodeName: "w-1", conditions: "ready" }],
      },
    ],
    nodes: [null, { metadata: { name: "w-1" }, status: { conditions: "Ready" } }],
    servingHosts: ["w-1", "", "W\n"],
  });
  // `conditions: "ready"` is no conditions object: ready absent counts as ready
  assert.deepEqual(decision.hosts, ["w-1"]);
  assert.deepEqual(decision.excluded, []);
});

const hostArb = fc.constantFrom("w-1", "w-2", "w-3", "cp-1");
const endpointArb = fc.record({
  node: hostArb,
  ready: fc.constantFrom(true, false, null, undefined),
  serving: fc.constantFrom(true, false, undefined),
  terminating: fc.constantFrom(true, false, undefined),
}, { requiredKeys: ["node"] });
const sliceArb = fc.record({
  service: fc.constantFrom("web", "api"),
  endpoints: fc.array(endpointArb, { maxLength: 6 }),
});
const inputArb = fc.record({
  policy: fc.constantFrom("Local", "Cluster", undefined),
  slices: fc.option(fc.array(sliceArb, { maxLength: 5 }), { nil: undefined }),
  nodes: fc.array(
    fc.record({ name: hostArb, ready: fc.constantFrom("True", "False", "Unknown", undefined) }),
    { maxLength: 4 },
  ),
  serving: fc.array(hostArb, { maxLength: 5 }),
});

type Input = typeof inputArb extends fc.Arbitrary<infer T> ? T : never;

function build(i: Input) {
  return {
    service: service(i.policy),
    endpointSlices: i.slices?.map((s) => slice(s.endpoints as EndpointSpec[], s.service)),
    nodes: i.nodes.map((n) => node(n.name, n.ready)),
    servingHosts: i.serving,
  };
}

Deno.test("property: chosen and excluded split the serving hosts exactly, and chosen is a subset", () => {
  fc.assert(fc.property(inputArb, (i) => {
    const decision = localTrafficHosts(build(i));
    const all = [...decision.hosts, ...decision.excluded.map((e) => e.host)].sort();
    assert.deepEqual(all, [...new Set(i.serving)].sort());
    assert.deepEqual([...decision.hosts], [...decision.hosts].sort());
  }));
});

Deno.test("property: under Local with known slices, every chosen host has a ready, non-terminating endpoint of the Service", () => {
  fc.assert(fc.property(inputArb, (i) => {
    const decision = localTrafficHosts(build(i));
    if (i.policy !== "Local" || i.slices === undefined) return;
    for (const host of decision.hosts) {
      const ok = i.slices.some((s) =>
        s.service === "web" &&
        s.endpoints.some((e) =>
          e.node === host && e.ready !== false && e.serving !== false && e.terminating !== true
        )
      );
      assert.ok(ok, `${host} chosen without a ready endpoint`);
    }
  }));
});

Deno.test("property: Cluster (or unknown slices) chooses exactly the serving hosts whose Node is not NotReady", () => {
  fc.assert(fc.property(inputArb, (i) => {
    const decision = localTrafficHosts(build(i));
    if (i.policy === "Local" && i.slices !== undefined) return;
    const notReady = new Set(
      i.nodes.filter((n) => n.ready !== undefined && n.ready !== "True").map((n) => n.name),
    );
    assert.deepEqual(
      decision.hosts,
      [...new Set(i.serving)].filter((h) => !notReady.has(h)).sort(),
    );
  }));
});

Deno.test("property: the order of slices, Nodes and serving hosts changes nothing", () => {
  fc.assert(fc.property(inputArb, fc.integer(), (i, seed) => {
    const a = build(i);
    const rotate = <T>(xs: readonly T[] | undefined) =>
      xs === undefined || xs.length === 0
        ? xs
        : [...xs.slice(Math.abs(seed) % xs.length), ...xs.slice(0, Math.abs(seed) % xs.length)];
    const b = {
      ...a,
      endpointSlices: rotate(a.endpointSlices),
      nodes: rotate(a.nodes)!,
      servingHosts: [...a.servingHosts].reverse(),
    };
    assert.deepEqual(localTrafficHosts(b), localTrafficHosts(a));
  }));
});

Deno.test("property: arbitrary JSON never throws and never chooses a host outside the serving hosts", () => {
  fc.assert(fc.property(
    fc.anything(),
    fc.array(fc.anything(), { maxLength: 5 }),
    fc.array(fc.anything(), { maxLength: 5 }),
    (svc, slices, nodes) => {
      const decision = localTrafficHosts({
        service: svc,
        endpointSlices: slices,
        nodes,
        servingHosts: ["w-1"],
      });
      assert.ok(decision.hosts.every((h) => h === "w-1"));
    },
  ));
});
