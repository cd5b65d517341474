/**
 * The cloud-node and node-lifecycle controllers against a real kube-apiserver + etcd, with Nodes
 * created the way kubelet creates them (`_harness/kubelet.ts`) and the real client, informer,
 * writer and event recorder.
 */
import assert from "node:assert/strict";
import type { CoreV1Event, V1Node } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import type { Config } from "../../src/config/types.ts";
import { NodeController } from "../../src/controllers/node/node_controller.ts";
import { ReloadDeletionGuard } from "../../src/controllers/node_lifecycle/deletion_guards.ts";
import {
  NodeLifecycleController,
  type NodeLifecyclePolicy,
} from "../../src/controllers/node_lifecycle/node_lifecycle_controller.ts";
import { createClusterWriter, createEventSink } from "../../src/kube/cluster_writer.ts";
import { AggregatingEventRecorder } from "../../src/kube/event_recorder.ts";
import { createInformer } from "../../src/kube/informer.ts";
import { createLeaseApi } from "../../src/kube/lease_api.ts";
import { ActionLedger } from "../../src/controllers/action_ledger/action_ledger.ts";
import { createKubeClient } from "../../src/kube/kube_client.ts";
import { resolveConnectionSettings } from "../../src/kube/kubeconfig.ts";
import { createBaremetalProvider } from "../../providers/baremetal/mod.ts";
import { testConfig } from "../unit/_fakes/test_inventory.ts";
import { type ControlPlane, integrationTest, startControlPlane } from "./_harness/control_plane.ts";
import { registerNode, setNodeReady, UNINITIALIZED_TAINT, waitFor } from "./_harness/kubelet.ts";
import { quietFor } from "./_harness/quiet.ts";

const BASE_MACHINES = [
  {
    name: "cp-1",
    id: "SN-CP1",
    role: "control-plane",
    region: "dc1",
    zone: "dc1-a",
    instance_type: "r650",
    internal_ips: ["10.0.0.11", "10.0.1.11"],
    external_ips: ["203.0.113.11"],
    hostname: "cp-1.dc1.example.net",
    labels: {
      "example.com/rack": "a03",
      "node.kubernetes.io/exclude-from-external-load-balancers": "x",
    },
  },
  { name: "w-1", id: "SN-W1", region: "dc1", zone: "dc1-b", internal_ips: ["10.0.0.21"] },
  { name: "old-1", id: "SN-OLD1", state: "retired", internal_ips: ["10.0.0.31"] },
  { name: "off-1", id: "SN-OFF1", state: "shutdown", internal_ips: ["10.0.0.41"] },
  ...[1, 2, 3, 4, 5].map((i) => ({ name: `t-${i}`, internal_ips: [`10.0.2.${i}`] })),
  ...[1, 2, 3].map((i) => ({ name: `r-${i}`, state: "retired", internal_ips: [`10.0.3.${i}`] })),
];

async function nodeEvents(cp: ControlPlane, name: string): Promise<CoreV1Event[]> {
  const list = await cp.requestOk<{ items: CoreV1Event[] }>(
    "GET",
    `/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3D${name}`,
  );
  return list.items;
}

async function getNode(cp: ControlPlane, name: string): Promise<V1Node | undefined> {
  const response = await cp.request<V1Node>("GET", `/api/v1/nodes/${name}`);
  return response.status === 404 ? undefined : response.body;
}

function taintKeys(node: V1Node | undefined): string[] {
  return (node?.spec?.taints ?? []).map((t) => t.key);
}

integrationTest(
  "NodeController and NodeLifecycleController handle kubelet-registered Nodes on a real apiserver",
  async (t) => {
    await using cp = await startControlPlane();
    const settings = await resolveConnectionSettings({ kubeconfig: cp.tokenKubeconfigPath });
    const registry = new Registry();
    const client = createKubeClient(settings, { registry, userAgent: "keelson-nodes-test" });
    const nodes = createInformer<V1Node>(client, { path: "/api/v1/nodes", kind: "Node", registry });
    const writer = createClusterWriter(client);
    const sink = createEventSink(client);
    const events = new AggregatingEventRecorder(sink, { component: "cloud-node-controller" });
    const lifecycleEvents = new AggregatingEventRecorder(sink, {
      component: "cloud-node-lifecycle-controller",
    });
    const inventory: { config: Config; healthy: boolean } = {
      config: testConfig({ machines: BASE_MACHINES }),
      healthy: true,
    };
    const guard = new ReloadDeletionGuard();
    guard.onConfig(inventory.config);
    const reload = (config: Config) => {
      inventory.config = config;
      guard.onConfig(config);
    };
    const provider = createBaremetalProvider(() => inventory);
    const stop = new AbortController();
    const informerDone = nodes.run(stop.signal);
    const controller = new NodeController(
      { nodes, writer, events, instances: provider.instancesV2, registry },
      { statusUpdateFrequencyMs: 600_000 },
    );
    const controllerDone = controller.run(stop.signal);

    let ledgers = 0;
    /** Starts a lifecycle controller with a rate limit of its own; returns its stopper. */
    function startLifecycle(policy: NodeLifecyclePolicy): () => Promise<void> {
      const abort = new AbortController();
      // a record Lease of its own, so earlier steps' deletions do not count
      const ledger = new ActionLedger({
        leases: createLeaseApi(client.rest),
        namespace: "kube-system",
        name: `keelson-nodes-test-${++ledgers}`,
      });
      const lifecycle = new NodeLifecycleController({
        nodes,
        writer,
        events: lifecycleEvents,
        instances: provider.instancesV2,
        registry: new Registry(),
        guard,
        ledger,
      }, { monitorPeriodMs: 100, policy: () => policy });
      const done = lifecycle.run(abort.signal);
      return async () => {
        abort.abort();
        await done;
      };
    }

    try {
      await t.step(
        "a tainted Node with provided-node-ip and no providerID is initialized",
        async () => {
          await registerNode(cp, "cp-1", { providedNodeIp: "10.0.0.11" });
          const node = await waitFor(async () => {
            const n = await getNode(cp, "cp-1");
            return n && !taintKeys(n).includes(UNINITIALIZED_TAINT) &&
              n.status?.addresses?.length === 3 && n;
          }, { message: "cp-1 initialized" });
          assert.equal(node.spec?.providerID, "baremetal://SN-CP1");
          const labels = { ...node.metadata?.labels };
          for (
            const key of [
              "kubernetes.io/hostname",
              "kubernetes.io/os",
              "kubernetes.io/arch",
              "beta.kubernetes.io/os",
              "beta.kubernetes.io/arch",
            ]
          ) {
            delete labels[key];
          }
          assert.deepEqual(labels, {
            "node.kubernetes.io/instance-type": "r650",
            "beta.kubernetes.io/instance-type": "r650",
            "topology.kubernetes.io/zone": "dc1-a",
            "failure-domain.beta.kubernetes.io/zone": "dc1-a",
            "topology.kubernetes.io/region": "dc1",
            "failure-domain.beta.kubernetes.io/region": "dc1",
            "example.com/rack": "a03",
          });
          // provided-node-ip 10.0.0.11: the other InternalIP is dropped, External and Hostname stay.
          assert.deepEqual(node.status?.addresses, [
            { type: "InternalIP", address: "10.0.0.11" },
            { type: "ExternalIP", address: "203.0.113.11" },
            { type: "Hostname", address: "cp-1.dc1.example.net" },
          ]);
          assert.ok(!taintKeys(node).includes(UNINITIALIZED_TAINT));
          await waitFor(
            async () => (await nodeEvents(cp, "cp-1")).some((e) => e.reason === "Synced"),
            {
              message: "Synced event on cp-1",
            },
          );
        },
      );

      await t.step("a Node registered with --provider-id keeps it and is initialized", async () => {
        await registerNode(cp, "w-1", { providerID: "baremetal://SN-W1" });
        const node = await waitFor(async () => {
          const n = await getNode(cp, "w-1");
          return n && !taintKeys(n).includes(UNINITIALIZED_TAINT) && n;
        }, { message: "w-1 initialized" });
        assert.equal(node.spec?.providerID, "baremetal://SN-W1");
        assert.equal(node.metadata?.labels?.["topology.kubernetes.io/zone"], "dc1-b");
      });

      await t.step("an unknown machine's Node stays tainted with a Warning event", async () => {
        await registerNode(cp, "ghost", { providedNodeIp: "10.9.9.9" });
        const event = await waitFor(
          async () => (await nodeEvents(cp, "ghost")).find((e) => e.reason === "InstanceNotFound"),
          {
            message: "InstanceNotFound event on ghost",
          },
        );
        assert.equal(event.type, "Warning");
        assert.match(event.message ?? "", /name "ghost".*10\.9\.9\.9/);
        assert.ok(taintKeys(await getNode(cp, "ghost")).includes(UNINITIALIZED_TAINT));
      });

      await t.step(
        "a retired machine's NotReady Node is deleted; a shutdown machine's Node is tainted then untainted when Ready",
        async () => {
          await registerNode(cp, "old-1", {
            providerID: "baremetal://SN-OLD1",
            initialized: true,
            ready: false,
          });
          await registerNode(cp, "off-1", {
            providerID: "baremetal://SN-OFF1",
            initialized: true,
            ready: false,
          });
          const stopLifecycle = startLifecycle({
            dryRun: false,
            maxDeletionsPerInterval: 10,
            deletionIntervalMs: 60_000,
          });
          try {
            await waitFor(async () => (await getNode(cp, "old-1")) === undefined, {
              message: "old-1 deleted",
            });
            await waitFor(
              async () =>
                taintKeys(await getNode(cp, "off-1")).includes(
                  "node.cloudprovider.kubernetes.io/shutdown",
                ),
              {
                message: "off-1 tainted shutdown",
              },
            );
            await setNodeReady(cp, "off-1", "True");
            await waitFor(
              async () =>
                !taintKeys(await getNode(cp, "off-1")).includes(
                  "node.cloudprovider.kubernetes.io/shutdown",
                ),
              {
                message: "off-1 untainted",
              },
            );
            assert.ok(
              await getNode(cp, "ghost"),
              "the never-initialized ghost Node is not deleted",
            );
          } finally {
            await stopLifecycle();
          }
          await waitFor(
            async () => (await nodeEvents(cp, "old-1")).some((e) => e.reason === "DeletingNode"),
            {
              message: "DeletingNode event on old-1",
            },
          );
        },
      );

      await t.step("truncating the inventory to one machine deletes no Node", async () => {
        for (let i = 1; i <= 5; i++) {
          await registerNode(cp, `t-${i}`, {
            providerID: `baremetal://t-${i}`,
            initialized: true,
            ready: false,
          });
        }
        await waitFor(() => nodes.get("t-5"), { message: "t-5 in the cache" });
        reload(testConfig({ machines: BASE_MACHINES.filter((m) => m.name === "cp-1") }));
        const stopLifecycle = startLifecycle({
          dryRun: false,
          maxDeletionsPerInterval: 100,
          deletionIntervalMs: 1,
        });
        try {
          await waitFor(
            async () => (await nodeEvents(cp, "t-1")).some((e) => e.reason === "DeletionBlocked"),
            {
              message: "DeletionBlocked event on t-1",
            },
          );
          await quietFor(cp, {
            what: "blocked deletions",
            paths: ["/api/v1/nodes"],
            forMs: 1_000,
            unwanted: (write) => write.type === "DELETED",
          });
        } finally {
          await stopLifecycle();
        }
        for (let i = 1; i <= 5; i++) assert.ok(await getNode(cp, `t-${i}`), `t-${i} still exists`);
        reload(testConfig({ machines: BASE_MACHINES }));
      });

      await t.step(
        "the deletion rate limit holds: one of three retired Nodes per interval",
        async () => {
          for (let i = 1; i <= 3; i++) {
            await registerNode(cp, `r-${i}`, {
              providerID: `baremetal://r-${i}`,
              initialized: true,
              ready: false,
            });
          }
          await waitFor(() => nodes.get("r-3"), { message: "r-3 in the cache" });
          const stopLifecycle = startLifecycle({
            dryRun: false,
            maxDeletionsPerInterval: 1,
            deletionIntervalMs: 60_000,
          });
          try {
            await waitFor(async () => {
              const left = await Promise.all([1, 2, 3].map((i) => getNode(cp, `r-${i}`)));
              return left.filter((n) => n === undefined).length === 1;
            }, { message: "one r-* Node deleted" });
            // one deletion per minute: no second one
            await quietFor(cp, {
              what: "the deletion limit",
              paths: ["/api/v1/nodes"],
              forMs: 1_000,
              unwanted: (write) => write.type === "DELETED",
            });
          } finally {
            await stopLifecycle();
          }
          const left = await Promise.all([1, 2, 3].map((i) => getNode(cp, `r-${i}`)));
          assert.equal(left.filter((n) => n !== undefined).length, 2);
        },
      );
    } finally {
      stop.abort();
      await Promise.allSettled([informerDone, controllerDone]);
      await events.flush();
      await lifecycleEvents.flush();
      client.close();
    }
  },
);
