/**
 * `keelson run` processes against a real kube-apiserver: leader election between two agents,
 * health and metrics, hand-over on SIGTERM and on SIGKILL, live reload of a broken file, and a
 * reload that changes a start-only setting (announced, not applied).
 *
 * Figures are printed with a `FIGURE` prefix.
 */
import assert from "node:assert/strict";
import type { CoreV1EventList, V1Lease, V1Node } from "@kubernetes/client-node";
import { integrationTest, startControlPlane } from "./_harness/control_plane.ts";
import { type KeelsonProcess, startKeelson } from "./_harness/keelson_process.ts";
import { registerNode, UNINITIALIZED_TAINT, waitFor } from "./_harness/kubelet.ts";
import { holdsFor, pollUntil } from "../_support/poll.ts";
import { decodeHostReport } from "../../src/status/host_report.ts";

// deno-lint-ignore no-console
const figure = (text: string) => console.error(`FIGURE ${text}`);

const LEADER = 'leader_election_master_status{name="keelson"}';

/** A small valid inventory; keepalived is off (no network namespaces in these tests). */
export function testInventory(extra = ""): string {
  return `
[cluster]
name = "it"

[keepalived]
enabled = false

[leader_election]
lease_duration = "15s"
renew_deadline = "10s"
retry_period = "2s"

[[pools]]
name = "lan"
addresses = ["192.0.2.0/28"]

[[machines]]
name = "cp-1"
role = "control-plane"
zone = "z1"
region = "r1"
internal_ips = ["10.0.0.11"]
${extra}
`;
}

async function leaderOf(agents: KeelsonProcess[]): Promise<KeelsonProcess | undefined> {
  const values = await Promise.all(agents.map((a) => a.metric(LEADER)));
  const leaders = agents.filter((_, i) => values[i] === 1);
  const standbys = agents.filter((_, i) => values[i] === 0);
  return leaders.length === 1 && standbys.length === agents.length - 1 ? leaders[0] : undefined;
}

integrationTest(
  "keelson run: two agents elect one leader, serve health and metrics, hand over on SIGTERM and SIGKILL",
  async (t) => {
    await using cp = await startControlPlane();
    const dir = await Deno.makeTempDir({ prefix: "keelson-agent-" });
    const configPath = `${dir}/keelson.toml`;
    await Deno.writeTextFile(configPath, testInventory());
    const start = (name: string) =>
      startKeelson({ configPath, kubeconfig: cp.tokenKubeconfigPath, host: name, dir, name });
    const agents = [await start("a"), await start("b")];
    try {
      const began = performance.now();
      const leader = await waitFor(() => leaderOf(agents), {
        timeoutMs: 60_000,
        message: "exactly one leader",
      });
      figure(`first leader after ${((performance.now() - began) / 1000).toFixed(1)} s`);
      const standby = agents.find((a) => a !== leader)!;

      await t.step("both serve /healthz 200 and /readyz once synced", async () => {
        for (const agent of agents) {
          const health = await agent.get("/healthz");
          assert.equal(health?.status, 200);
          assert.equal(health?.body, "ok");
          await waitFor(async () => (await agent.get("/readyz"))?.status === 200, {
            timeoutMs: 20_000,
            message: "readyz",
          });
        }
        const verbose = await leader.get("/healthz?verbose");
        assert.match(verbose?.body ?? "", /\[\+\]leaderElection ok/);
        assert.match(verbose?.body ?? "", /\[\+\]cloud-node-controller ok/);
        assert.match(verbose?.body ?? "", /\[\+\]service-lb-controller ok/);
        assert.match(verbose?.body ?? "", /\[\+\]vip-host-controller ok/);
      });

      await t.step("metrics expose the upstream names", async () => {
        const metrics = (await leader.get("/metrics"))?.body ?? "";
        for (
          const name of [
            "keelson_build_info",
            "workqueue_adds_total",
            "rest_client_requests_total",
            "keelson_config_last_reload_successful 1",
            'running_managed_controllers{name="service",manager="keelson"} 1',
            'running_managed_controllers{name="vip-host",manager="keelson"} 1',
          ]
        ) assert.ok(metrics.includes(name), `missing ${name}`);
        assert.equal(await standby.metric(LEADER), 0);
      });

      await t.step(
        "the Lease is held, and SIGTERM hands over (figure printed; bound 8 s for a loaded machine)",
        async () => {
          const lease = await cp.requestOk<V1Lease>(
            "GET",
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/keelson",
          );
          assert.ok(lease.spec?.holderIdentity);
          const stopped = performance.now();
          const stopping = leader.stop();
          await waitFor(async () => (await standby.metric(LEADER)) === 1, {
            timeoutMs: 20_000,
            intervalMs: 50,
            message: "the standby to lead",
          });
          const took = (performance.now() - stopped) / 1000;
          figure(`SIGTERM hand-over: ${took.toFixed(2)} s`);
          await stopping;
          const exit = await leader.process.exited();
          assert.equal(exit.code, 0, "a SIGTERM stop exits 0");
          assert.ok(took < 8, `hand-over took ${took.toFixed(2)} s`);
        },
      );

      await t.step(
        "SIGKILL of the leader: the other leads within lease duration + retry",
        async () => {
          const restarted = await start("a2");
          agents.push(restarted);
          await waitFor(async () => (await restarted.metric(LEADER)) === 0, {
            timeoutMs: 30_000,
            message: "the restarted agent to stand by",
          });
          const killed = performance.now();
          standby.process.kill("SIGKILL");
          await waitFor(async () => (await restarted.metric(LEADER)) === 1, {
            timeoutMs: 40_000,
            intervalMs: 100,
            message: "the restarted agent to lead",
          });
          const took = (performance.now() - killed) / 1000;
          figure(`SIGKILL hand-over: ${took.toFixed(2)} s (lease 15 s, retry 2 s)`);
          // Expiry is judged on the standby's own clock from when it last saw the record change
          // (client-go), and its polls are jittered up to 2.2 retry periods: 15 + 2 x 4.4 bounds it.
          assert.ok(took <= 15 + 2 * 4.4 + 1, `hand-over took ${took.toFixed(2)} s`);
        },
      );
    } finally {
      await Promise.all(agents.map((a) => a.stop()));
      await Deno.remove(dir, { recursive: true });
    }
  },
);

integrationTest(
  "keelson run: a file edited to an invalid state keeps the old config, fixing it recovers, a start-only change is announced until edited back",
  async () => {
    await using cp = await startControlPlane();
    const dir = await Deno.makeTempDir({ prefix: "keelson-reload-" });
    const configPath = `${dir}/keelson.toml`;
    await Deno.writeTextFile(configPath, testInventory());
    const agent = await startKeelson({ configPath, kubeconfig: cp.tokenKubeconfigPath, dir });
    try {
      const reloadOk = "keelson_config_last_reload_successful";
      await waitFor(async () => (await agent.metric(reloadOk)) === 1, {
        timeoutMs: 30_000,
        message: "the agent to start",
      });
      // a pool that overlaps the first one: invalid, and on a known line
      const broken = testInventory(`
[[pools]]
name = "overlap"
addresses = ["192.0.2.8/29"]
`);
      await Deno.writeTextFile(configPath, broken);
      await waitFor(async () => (await agent.metric(reloadOk)) === 0, {
        timeoutMs: 10_000,
        message: "the reload to be rejected",
      });
      const line = broken.split("\n").findIndex((l) => l.includes("192.0.2.8/29")) + 1;
      const log = await agent.log();
      assert.match(log, new RegExp(`keelson\\.toml:${line}: pools\\[1\\]\\.addresses\\[0\\]`));
      assert.equal((await agent.get("/healthz"))?.status, 200, "still serving");
      assert.ok(agent.process.running, "still running");

      await Deno.writeTextFile(configPath, testInventory());
      await waitFor(async () => (await agent.metric(reloadOk)) === 1, {
        timeoutMs: 10_000,
        message: "the fixed file to be accepted",
      });

      // SIGHUP reloads too (the file is unchanged, so only the timestamp moves)
      const before = await agent.metric("keelson_config_last_reload_success_timestamp_seconds");
      // the gauge counts whole seconds: the next one first
      await pollUntil("the next second", () => Math.floor(Date.now() / 1000) > before!, {
        timeoutMs: 5_000,
        intervalMs: 50,
      });
      Deno.kill(agent.process.pid!, "SIGHUP");
      await waitFor(
        async () =>
          (await agent.metric("keelson_config_last_reload_success_timestamp_seconds"))! > before!,
        { timeoutMs: 10_000, message: "SIGHUP to reload" },
      );

      // a start-only setting changed: the reload applies, the old value stays in force and the
      // log, the gauge and the heartbeat say a restart is pending; editing it back clears that
      const restartRequired = "keelson_config_restart_required";
      assert.equal(await agent.metric(restartRequired), 0);
      const written = performance.now();
      await Deno.writeTextFile(
        configPath,
        testInventory().replace('lease_duration = "15s"', 'lease_duration = "20s"'),
      );
      await waitFor(async () => (await agent.metric(restartRequired)) === 1, {
        timeoutMs: 10_000,
        message: "the start-only change to be noticed",
      });
      const noticedMs = performance.now() - written;
      assert.equal(await agent.metric(reloadOk), 1, "the reload itself succeeded");
      assert.match(
        await agent.log(),
        /\[leader_election\] lease_duration 15s -> 20s.*restart keelson to apply/,
      );
      const heartbeat = async () => {
        const lease = await cp.request<V1Lease>(
          "GET",
          "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/keelson-host-test-host",
        );
        const text = lease.body?.metadata?.annotations?.["keelson.io/data-plane"];
        const report = text === undefined ? undefined : decodeHostReport(text);
        return report && !("error" in report) ? report : undefined;
      };
      // the heartbeat renews every 5 s
      await waitFor(
        async () =>
          (await heartbeat())?.reload.restart?.join() === "[leader_election] lease_duration",
        { timeoutMs: 20_000, message: "the heartbeat to report the pending restart" },
      );
      // the other inputs come from their owners: the reloader's last success, the provider's pools
      const report = await heartbeat();
      assert.ok(report?.reload.at, "the last successful load");
      assert.deepEqual(report?.pools, [{ pool: "lan", family: "IPv4", total: 14, used: 0 }]);
      figure(
        `start-only change: gauge 1 after ${noticedMs.toFixed(0)} ms (0.5 s debounce), ` +
          `in the heartbeat after ${(performance.now() - written).toFixed(0)} ms`,
      );
      await Deno.writeTextFile(configPath, testInventory());
      await waitFor(async () => (await agent.metric(restartRequired)) === 0, {
        timeoutMs: 10_000,
        message: "the edit back to clear the pending restart",
      });
      await waitFor(async () => (await heartbeat())?.reload.restart === undefined, {
        timeoutMs: 20_000,
        message: "the heartbeat to drop the pending restart",
      });
    } finally {
      await agent.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
);

integrationTest(
  "keelson run survives the apiserver stopping for 10 s: watches resume and a new Node is initialized (figure printed)",
  async () => {
    await using cp = await startControlPlane();
    const dir = await Deno.makeTempDir({ prefix: "keelson-outage-" });
    const configPath = `${dir}/keelson.toml`;
    await Deno.writeTextFile(
      configPath,
      testInventory(`
[[machines]]
name = "w-1"
zone = "z1"
region = "r1"
internal_ips = ["10.0.0.21"]
`),
    );
    const agent = await startKeelson({
      configPath,
      kubeconfig: cp.certKubeconfigPath,
      dir,
      host: "cp-1",
    });
    try {
      await waitFor(async () => (await agent.metric(LEADER)) === 1, {
        timeoutMs: 30_000,
        message: "the agent to lead",
      });
      await cp.stopApiserver();
      await holdsFor("the agent alive while the apiserver is down", () => agent.process.running, {
        forMs: 10_000,
        intervalMs: 100,
      });
      assert.equal((await agent.get("/healthz"))?.status, 200);
      await cp.startApiserver();
      // the Lease was renewed by nobody for 10 s; the agent keeps or regains it
      await waitFor(async () => (await agent.metric(LEADER)) === 1, {
        timeoutMs: 40_000,
        message: "the agent to lead again",
      });
      const created = performance.now();
      await registerNode(cp, "w-1", { providedNodeIp: "10.0.0.21" });
      const node = await waitFor(async () => {
        const n = await cp.requestOk<V1Node>("GET", "/api/v1/nodes/w-1");
        const tainted = (n.spec?.taints ?? []).some((t) => t.key === UNINITIALIZED_TAINT);
        return !tainted && n.spec?.providerID ? n : undefined;
      }, { timeoutMs: 10_000, intervalMs: 50, message: "w-1 to be initialized" });
      const took = (performance.now() - created) / 1000;
      figure(`after the outage, a new Node was initialized in ${took.toFixed(2)} s`);
      assert.equal(node.spec?.providerID, "baremetal://w-1");
      assert.equal(node.metadata?.labels?.["topology.kubernetes.io/zone"], "z1");
      assert.ok(took < 8, `initialization took ${took.toFixed(2)} s`);
      // the controllers' Events name --host (cp-1) as their source, not the OS host name
      const synced = await waitFor(async () => {
        const events = await cp.requestOk<CoreV1EventList>(
          "GET",
          "/api/v1/namespaces/default/events",
        );
        const found = events.items.filter((e) =>
          e.involvedObject.name === "w-1" && e.source?.component === "cloud-node-controller"
        );
        return found.length > 0 ? found : undefined;
      }, { timeoutMs: 10_000, message: "the cloud-node controller's Event on w-1" });
      assert.deepEqual([...new Set(synced.map((e) => e.source?.host))], ["cp-1"]);
      assert.ok(agent.process.running);
    } catch (error) {
      // deno-lint-ignore no-console
      console.error((await agent.log()).split("\n").slice(-60).join("\n"));
      throw error;
    } finally {
      await agent.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
);
