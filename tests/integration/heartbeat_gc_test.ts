/**
 * A removed host's heartbeat Lease goes with its Node, by a real garbage collector: two real
 * `keelson run` hosts (n-1, n-2, each with its own Node-bound credential and deploy/rbac.yaml)
 * write their heartbeats owned by their Nodes while a real kube-controller-manager runs only its
 * garbage collector; Node n-1 is deleted and its Lease is deleted by the collector, while n-2's,
 * whose Node stays, is left alone (the same object, still renewed).
 *
 * heartbeat_owner_test.ts pins the owner reference itself; this file shows Kubernetes acts on it.
 * The figures (collector start, deletion delay) are printed, not asserted: the bound is generous.
 */
import assert from "node:assert/strict";
import type { V1Lease, V1Node } from "@kubernetes/client-node";
import { type ControlPlane, startControlPlane } from "./_harness/control_plane.ts";
import { controllerManagerTest, startControllerManager } from "./_harness/controller_manager.ts";
import { type KeelsonProcess, startKeelson } from "./_harness/keelson_process.ts";
import { registerNode, waitFor } from "./_harness/kubelet.ts";
import { applyRbac, nodeBoundToken } from "./_harness/credentials.ts";
import { writeKubeconfig } from "./_harness/kubeconfig.ts";
import { quietFor } from "./_harness/quiet.ts";

// deno-lint-ignore no-console
const figure = (text: string) => console.error(`FIGURE ${text}`);

const INVENTORY = `
[cluster]
name = "gc"

[keepalived]
enabled = false

[[pools]]
name = "lan"
addresses = ["192.0.2.0/28"]

[[machines]]
name = "n-1"
id = "SN-N1"
role = "worker"
zone = "z1"
region = "r1"
internal_ips = ["10.0.0.21"]

[[machines]]
name = "n-2"
id = "SN-N2"
role = "worker"
zone = "z1"
region = "r1"
internal_ips = ["10.0.0.22"]
`;

const LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases";

/** The bound on the collector's reaction (its first sync on a loaded machine included). */
const DELETION_BOUND_MS = 120_000;

/** The heartbeat Lease of `host`; undefined on 404. */
async function heartbeat(cp: ControlPlane, host: string): Promise<V1Lease | undefined> {
  const response = await cp.request<V1Lease>("GET", `${LEASES}/keelson-host-${host}`);
  if (response.status === 404) return undefined;
  assert.equal(response.status, 200, JSON.stringify(response.body));
  return response.body;
}

/** Starts `keelson run` for `host` with a token bound to its Node (README, Kubernetes access). */
async function startHost(
  cp: ControlPlane,
  dir: string,
  configPath: string,
  host: string,
): Promise<KeelsonProcess> {
  const kubeconfig = `${dir}/${host}.kubeconfig`;
  await writeKubeconfig(kubeconfig, cp.server, cp.caPem, "keelson", {
    token: await nodeBoundToken(cp, host),
  });
  return await startKeelson({ configPath, kubeconfig, host, dir });
}

/** Waits until `host`'s heartbeat names its Node as owner; returns the Lease. */
async function ownedHeartbeat(
  cp: ControlPlane,
  agent: KeelsonProcess,
  host: string,
  node: V1Node,
): Promise<V1Lease> {
  let lease: V1Lease;
  try {
    // the first write may come before the Node cache synced; the next renew names the owner
    lease = await waitFor(async () => {
      const l = await heartbeat(cp, host);
      return l?.metadata?.ownerReferences?.length ? l : undefined;
    }, { timeoutMs: 60_000, message: `the heartbeat of ${host} owned by its Node` });
  } catch (error) {
    throw new Error(`${String(error)}\nkeelson log tail:\n${(await agent.log()).slice(-4000)}`);
  }
  assert.deepEqual(lease.metadata!.ownerReferences, [
    { apiVersion: "v1", kind: "Node", name: host, uid: node.metadata!.uid },
  ]);
  return lease;
}

controllerManagerTest(
  "heartbeat Lease: a real garbage collector deletes it with its Node and leaves one whose Node exists",
  async (t) => {
    await using cp = await startControlPlane();
    await applyRbac(cp);
    const n1 = await registerNode(cp, "n-1", { providedNodeIp: "10.0.0.21" });
    const n2 = await registerNode(cp, "n-2", { providedNodeIp: "10.0.0.22" });

    await using kcm = await startControllerManager(cp);
    figure(`kube-controller-manager /healthz after ${Math.round(kcm.healthyMs)} ms`);
    // watched from now on, so the figure is the collector's own start, not when it was asked
    const collecting = kcm.waitForGarbageCollector();
    collecting.catch(() => {}); // awaited in its step; a failure before then is reported there

    const dir = await Deno.makeTempDir({ prefix: "keelson-gc-" });
    const configPath = `${dir}/keelson.toml`;
    await Deno.writeTextFile(configPath, INVENTORY);
    await using agent1 = await startHost(cp, dir, configPath, "n-1");
    await using agent2 = await startHost(cp, dir, configPath, "n-2");
    try {
      let lease1: V1Lease | undefined;
      let lease2: V1Lease | undefined;
      await t.step("each host's heartbeat names its Node as owner", async () => {
        lease1 = await ownedHeartbeat(cp, agent1, "n-1", n1);
        lease2 = await ownedHeartbeat(cp, agent2, "n-2", n2);
      });

      await t.step("the garbage collector starts collecting", async () => {
        const ms = await collecting;
        figure(
          `garbage collector collecting ${Math.round(ms)} ms after kube-controller-manager started`,
        );
        // it has seen both Leases with their owners present: neither is deleted
        assert.equal((await heartbeat(cp, "n-1"))?.metadata?.uid, lease1!.metadata!.uid);
        assert.equal((await heartbeat(cp, "n-2"))?.metadata?.uid, lease2!.metadata!.uid);
      });

      await t.step("Node n-1 deleted: the collector deletes its heartbeat", async () => {
        const began = performance.now();
        await cp.requestOk("DELETE", "/api/v1/nodes/n-1");
        // Gone means this object is gone: n-1's keelson still runs, but its token was bound to
        // the deleted Node, so it cannot write a new one (a new uid would count as gone too).
        await waitFor(async () => {
          const lease = await heartbeat(cp, "n-1");
          return lease === undefined || lease.metadata?.uid !== lease1!.metadata!.uid;
        }, {
          timeoutMs: DELETION_BOUND_MS,
          intervalMs: 10,
          message: "the garbage collector to delete keelson-host-n-1",
        }).catch(async (error) => {
          throw new Error(
            `${String(error)}\nkube-controller-manager log tail:\n${await kcm.process.logTail()}`,
          );
        });
        figure(`heartbeat deleted ${Math.round(performance.now() - began)} ms after its Node`);
        // it was the collector (its log line precedes the DELETE it sends)
        await waitFor(async () => /"Deleting item".*keelson-host-n-1/.test(await kcm.log()), {
          timeoutMs: 10_000,
          message: "the collector's log line about deleting keelson-host-n-1",
        });
      });

      await t.step(
        "n-2's heartbeat, whose Node exists, stays: the same object, renewed",
        async () => {
          const renewed = lease2!.spec!.renewTime;
          // a few of the collector's rounds after it acted on n-1, and at least one renew (5 s)
          await waitFor(async () => {
            const lease = await heartbeat(cp, "n-2");
            assert.ok(lease, "keelson-host-n-2 exists");
            assert.equal(lease.metadata?.uid, lease2!.metadata!.uid, "the same object");
            return lease.spec?.renewTime !== renewed;
          }, { timeoutMs: 30_000, message: "keelson-host-n-2 to be renewed" });
          // renewals go on; a delete or a new object (another uid) fails at once
          await quietFor(cp, {
            what: "keelson-host-n-2",
            paths: [
              "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases" +
              "?fieldSelector=metadata.name%3Dkeelson-host-n-2",
            ],
            forMs: 3_000,
            unwanted: (write) =>
              write.type === "DELETED" ||
              (write.object.metadata as { uid?: string } | undefined)?.uid !==
                lease2!.metadata!.uid,
          });
          const lease = await heartbeat(cp, "n-2");
          assert.equal(lease?.metadata?.uid, lease2!.metadata!.uid);
          assert.deepEqual(lease?.metadata?.ownerReferences, [
            { apiVersion: "v1", kind: "Node", name: "n-2", uid: n2.metadata!.uid },
          ]);
          assert.doesNotMatch(await kcm.log(), /"Deleting item".*keelson-host-n-2/);
        },
      );
    } finally {
      await agent1.stop();
      await agent2.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
);
