import assert from "node:assert/strict";
import type { V1Node } from "@kubernetes/client-node";
import {
  type InstanceMetadata,
  InstanceNotFoundError,
  type InstancesV2,
  ProviderError,
} from "../../../../src/cloud/provider.ts";
import { decideNodeSync } from "../../../../src/controllers/node/decide_node_sync.ts";

const UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized";

function node(options: {
  tainted?: boolean;
  providerID?: string;
  labels?: Record<string, string>;
  providedIp?: string;
} = {}): V1Node {
  return {
    metadata: {
      name: "n1",
      labels: options.labels ?? {},
      annotations: options.providedIp
        ? { "alpha.kubernetes.io/provided-node-ip": options.providedIp }
        : {},
    },
    spec: {
      ...(options.providerID ? { providerID: options.providerID } : {}),
      taints: options.tainted === false
        ? []
        : [{ key: UNINITIALIZED, value: "true", effect: "NoSchedule" }],
    },
    status: { addresses: [] },
  };
}

function metadata(extra: Partial<InstanceMetadata> = {}): InstanceMetadata {
  return {
    providerID: "baremetal://SN-1",
    instanceType: "r650",
    nodeAddresses: [{ type: "InternalIP", address: "10.0.0.11" }],
    zone: "z1",
    region: "r1",
    additionalLabels: {},
    ...extra,
  };
}

/** InstancesV2 whose instanceMetadata answers `answer` (a value, or an error to throw). */
function instances(answer: InstanceMetadata | null | Error): InstancesV2 {
  const fail = () => Promise.reject(new Error("not used by decideNodeSync"));
  return {
    instanceExists: fail,
    instanceShutdown: fail,
    instanceMetadata: () =>
      answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer),
  };
}

Deno.test("decideNodeSync() decides each case from the Node and the provider's answer", async () => {
  const cases: {
    name: string;
    node: V1Node;
    answer: InstanceMetadata | null | Error;
    kind: string;
    check?: (decision: Awaited<ReturnType<typeof decideNodeSync>>) => void;
  }[] = [
    {
      name: "an initialized Node only reconciles beta labels to GA",
      node: node({
        tainted: false,
        labels: {
          "beta.kubernetes.io/instance-type": "r650",
          "failure-domain.beta.kubernetes.io/zone": "z1",
        },
      }),
      answer: new Error("the provider is not asked"),
      kind: "initialized",
      check: (d) => {
        assert.ok(d.kind === "initialized");
        assert.deepEqual(d.gaLabels, {
          "node.kubernetes.io/instance-type": "r650",
          "topology.kubernetes.io/zone": "z1",
        });
      },
    },
    {
      name: "an initialized Node with GA labels has nothing to reconcile",
      node: node({ tainted: false, labels: { "node.kubernetes.io/instance-type": "r650" } }),
      answer: new Error("the provider is not asked"),
      kind: "initialized",
      check: (d) => assert.ok(d.kind === "initialized" && Object.keys(d.gaLabels).length === 0),
    },
    {
      name: "a tainted Node with metadata is initialized: providerID, labels, addresses",
      node: node(),
      answer: metadata(),
      kind: "initialize",
      check: (d) => {
        assert.ok(d.kind === "initialize");
        assert.equal(d.initialization.node.spec?.providerID, "baremetal://SN-1");
        assert.equal(d.initialization.node.metadata?.labels?.["topology.kubernetes.io/zone"], "z1");
        assert.deepEqual(d.addresses, [{ type: "InternalIP", address: "10.0.0.11" }]);
      },
    },
    {
      name: "no metadata (nil) leaves the Node tainted without retry",
      node: node(),
      answer: null,
      kind: "skip",
    },
    {
      name: "an unknown machine is not-found (Warning, retry)",
      node: node(),
      answer: new InstanceNotFoundError("no machine for n1", 'name "n1"'),
      kind: "not-found",
      check: (d) => assert.ok(d.kind === "not-found" && d.error.tried === 'name "n1"'),
    },
    {
      name: "a non-retriable provider error fails without retry",
      node: node(),
      answer: new ProviderError("inventory says no", { retriable: false }),
      kind: "failed",
      check: (d) => assert.ok(d.kind === "failed" && d.retriable === false),
    },
    {
      name: "any other error fails with retry",
      node: node(),
      answer: new Error("timeout"),
      kind: "failed",
      check: (d) => assert.ok(d.kind === "failed" && d.retriable && d.error.message === "timeout"),
    },
    {
      name: "metadata without a providerID on a Node without one fails with retry",
      node: node(),
      answer: metadata({ providerID: "" }),
      kind: "failed",
      check: (d) => {
        assert.ok(d.kind === "failed" && d.retriable);
        assert.match(d.error.message, /provider ID/);
      },
    },
    {
      name: "a provided node IP that no machine address matches fails with retry",
      node: node({ providedIp: "10.9.9.9" }),
      answer: metadata(),
      kind: "failed",
      check: (d) => assert.ok(d.kind === "failed" && /provided node ip/.test(d.error.message)),
    },
  ];
  for (const c of cases) {
    const decision = await decideNodeSync(c.node, instances(c.answer));
    assert.equal(decision.kind, c.kind, c.name);
    c.check?.(decision);
  }
});

Deno.test("decideNodeSync() turns a thrown non-Error into an Error", async () => {
  const odd: InstancesV2 = {
    instanceExists: () => Promise.resolve(true),
    instanceShutdown: () => Promise.resolve(false),
    instanceMetadata: () => Promise.reject("plain string"),
  };
  const decision = await decideNodeSync(node(), odd);
  assert.ok(decision.kind === "failed" && decision.error instanceof Error);
  assert.equal(decision.error.message, "plain string");
});
