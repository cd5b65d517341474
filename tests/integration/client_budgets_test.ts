/**
 * Per-controller client budgets on a real kube-apiserver: with a deliberately small
 * `--kube-api-qps/--kube-api-burst` and one node worker per Node, a burst of Nodes to initialize
 * (two requests each, all queued at once on the cloud-node controller's budget) does not hold up
 * a LoadBalancer Service created right after it: the Service's writes use the service
 * controller's own budget, as upstream's per-controller clients do. With one budget for the
 * process the Service would wait behind every queued Node request. Compared, not timed: the
 * Service must be done while most Nodes still wait.
 */
import assert from "node:assert/strict";
import type { V1Node, V1Service } from "@kubernetes/client-node";
import { integrationTest, startControlPlane } from "./_harness/control_plane.ts";
import { startKeelson } from "./_harness/keelson_process.ts";
import { registerNode, UNINITIALIZED_TAINT } from "./_harness/kubelet.ts";
import { createLbService, figure } from "./_harness/lb_services.ts";
import { waitFor } from "./_harness/wait.ts";

/** Nodes registered at once. */
const N = 40;
/** Each client's budget: the Nodes alone need about 2 N / QPS = 20 s of it. */
const QPS = 4;
const BURST = 4;
const LEADER = 'leader_election_master_status{name="keelson"}';

const nodeName = (i: number) => `burst-${String(i).padStart(2, "0")}`;
const nodeIp = (i: number) => `10.200.0.${i + 1}`;

function inventory(): string {
  const machines = Array.from({ length: N }, (_, i) => `
[[machines]]
name = "${nodeName(i)}"
zone = "z1"
region = "r1"
internal_ips = ["${nodeIp(i)}"]`).join("\n");
  return `
[cluster]
name = "budgets"

[keepalived]
enabled = false

[[pools]]
name = "lan"
addresses = ["192.0.2.0/28"]
${machines}
`;
}

function initialized(node: V1Node): boolean {
  return Boolean(node.spec?.providerID) &&
    !(node.spec?.taints ?? []).some((taint) => taint.key === UNINITIALIZED_TAINT);
}

integrationTest(
  "a burst of Nodes does not delay a LoadBalancer Service: each controller has its own client budget",
  async () => {
    await using cp = await startControlPlane();
    const dir = await Deno.makeTempDir({ prefix: "keelson-budgets-" });
    const configPath = `${dir}/keelson.toml`;
    await Deno.writeTextFile(configPath, inventory());
    const agent = await startKeelson({
      configPath,
      kubeconfig: cp.tokenKubeconfigPath,
      host: "budgets",
      dir,
      // as many node workers as Nodes: the whole burst queues on the node controller's budget
      args: [
        "--kube-api-qps",
        String(QPS),
        "--kube-api-burst",
        String(BURST),
        "--concurrent-node-syncs",
        String(N),
      ],
    });
    try {
      await waitFor(async () => (await agent.metric(LEADER)) === 1, {
        timeoutMs: 60_000,
        intervalMs: 200,
        message: "the agent to lead",
      });
      await cp.requestOk("POST", "/api/v1/namespaces", { metadata: { name: "budgets" } });
      // the informers' start-up requests are on their own budget; let them finish
      await new Promise((resolve) => setTimeout(resolve, 1000));

      await Promise.all(
        Array.from(
          { length: N },
          (_, i) => registerNode(cp, nodeName(i), { providedNodeIp: nodeIp(i) }),
        ),
      );
      await createLbService(cp, "budgets", "web");

      const doneAt = await waitFor(async () => {
        const service = await cp.requestOk<V1Service>(
          "GET",
          "/api/v1/namespaces/budgets/services/web",
        );
        if ((service.status?.loadBalancer?.ingress ?? []).length === 0) return undefined;
        const nodes = await cp.requestOk<{ items: V1Node[] }>("GET", "/api/v1/nodes");
        return nodes.items.filter(initialized).length + 1; // +1: 0 would read as "not yet"
      }, { timeoutMs: 60_000, intervalMs: 100, message: "the Service's ingress" });
      const nodesDone = doneAt - 1;
      figure(
        `Service ingress written when ${nodesDone} of ${N} Nodes were initialized ` +
          `(QPS ${QPS} / burst ${BURST} per client)`,
      );
      assert.ok(
        nodesDone < N / 2,
        `the Service waited for the Node burst: ${nodesDone} of ${N} Nodes were done first`,
      );

      // and the burst itself completes on the node controller's budget
      await waitFor(async () => {
        const nodes = await cp.requestOk<{ items: V1Node[] }>("GET", "/api/v1/nodes");
        return nodes.items.filter(initialized).length === N;
      }, { timeoutMs: 120_000, intervalMs: 500, message: `all ${N} Nodes initialized` });
    } catch (error) {
      figure(`keelson log tail:\n${(await agent.log()).slice(-3000)}`);
      throw error;
    } finally {
      await agent.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
);
