/**
 * The power actions' cap across a change of leader, end to end: two Keelson processes as they
 * ship (the bundle, the baked permissions, the unprivileged user, each host's own Node-bound
 * token under deploy/rbac.yaml), a real kube-apiserver, a real kube-controller-manager (taint
 * eviction and pod garbage collection) and sushy-tools' Redfish emulator.
 *
 * Four machines are powered off at once with the default cap (`max_actions_per_interval = 2`,
 * `action_interval = "1m"`). The leader is killed right after its first two out-of-service taints
 * (SIGTERM: a restart or an upgrade; then SIGKILL: a crash, the Lease left to expire); the other
 * process takes over. No window of one minute may hold more than two taints: the new leader counts
 * its predecessor's taints from the record on the leader Lease. It does take the other two out of
 * service afterwards (so the cap, not a failure, held them back).
 *
 * Figures (`FIGURE`): when each taint came, relative to the first.
 */
import assert from "node:assert/strict";
import type { V1Lease, V1Node } from "@kubernetes/client-node";
import { integrationTest } from "./_harness/assets.ts";
import { applyRbac, nodeBoundToken } from "./_harness/credentials.ts";
import { type ControlPlane, startControlPlane } from "./_harness/control_plane.ts";
import { startControllerManager } from "./_harness/controller_manager.ts";
import { powerLabMissing } from "./_harness/power_lab.ts";
import { type KeelsonProcess, startKeelson } from "./_harness/keelson_process.ts";
import { writeKubeconfig } from "./_harness/kubeconfig.ts";
import { registerNode, setNodeReady } from "./_harness/kubelet.ts";
import { figure } from "./_harness/lb_services.ts";
import { readableByTestUser } from "./_harness/shipped_keelson.ts";
import { startSushy, type Sushy } from "./_harness/sushy.ts";
import { waitFor } from "./_harness/wait.ts";

const OUT_OF_SERVICE = "node.kubernetes.io/out-of-service";
const MARKER = "keelson.io/out-of-service-added";
const LEDGER = "keelson.io/power-action-ledger";
const LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/keelson";
const HOSTS = ["cp-1", "cp-2"] as const;
const WORKERS = ["w-1", "w-2", "w-3", "w-4"] as const;
/** The default cap: 2 taints per minute. */
const WINDOW_MS = 60_000;
/** Power-off to the first two taints, and to the last two (a window and a takeover later). */
const FIRST_TAINTS_BOUND_MS = 120_000;
const LAST_TAINTS_BOUND_MS = 240_000;

const missing = await powerLabMissing();

function inventory(bmc: Sushy, systems: Record<string, string>): string {
  const workers = Object.entries(systems).map(([name, uuid]) => `
[[machines]]
name = "${name}"
role = "worker"

[machines.bmc]
endpoint = "${bmc.url}"
system = "${bmc.systemPath(uuid)}"
username_file = "${bmc.usernameFile}"
password_file = "${bmc.passwordFile}"
ca_file = "${bmc.certificates.caFile}"
`).join("");
  const hosts = HOSTS.map((name) => `
[[machines]]
name = "${name}"
role = "control-plane"
`).join("");
  return `
[cluster]
name = "power-limits"

[keepalived]
enabled = false

[controllers]
enabled = ["cloud-node-lifecycle", "out-of-service"]

[power]
out_of_service = true
${hosts}${workers}`;
}

/** When each worker got the out-of-service taint (Keelson's marker: milliseconds), if it has. */
async function taintTimes(cp: ControlPlane): Promise<Map<string, number>> {
  const times = new Map<string, number>();
  for (const name of WORKERS) {
    const node = await cp.requestOk<V1Node>("GET", `/api/v1/nodes/${name}`);
    if (!node.spec?.taints?.some((t) => t.key === OUT_OF_SERVICE)) continue;
    const marker = node.metadata?.annotations?.[MARKER];
    assert.ok(marker, `Keelson's marker on ${name}`);
    times.set(name, Date.parse(marker));
  }
  return times;
}

/** The taint times sorted, and the most taints any one window of `WINDOW_MS` holds. */
function busiestWindow(times: Iterable<number>): { sorted: number[]; most: number } {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  for (const [i, start] of sorted.entries()) {
    most = Math.max(most, sorted.slice(i).filter((t) => t < start + WINDOW_MS).length);
  }
  return { sorted, most };
}

async function leads(agent: KeelsonProcess): Promise<boolean> {
  return (await agent.metric('leader_election_master_status{name="keelson"}')) === 1;
}

async function withLogs<T>(agents: KeelsonProcess[], work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    // the lines of the parts under test, not the informers' reconnects
    const relevant = /"logger":"keelson\.(controllers|leader-election|agent|provider\.power)/;
    const tails = await Promise.all(agents.map(async (a) => {
      const lines = (await a.log()).split("\n").filter((line) => relevant.test(line));
      return `--- ${a.process.logPath}\n${lines.slice(-60).join("\n").slice(-12_000)}`;
    }));
    throw new Error(`${error}\n${tails.join("\n")}`);
  }
}

integrationTest(
  "the out-of-service cap holds across a change of leader: four machines off, the leader killed after two taints, at most two in any minute",
  async (t) => {
    const systems = Object.fromEntries(WORKERS.map((name) => [name, crypto.randomUUID()]));
    await using cp = await startControlPlane();
    await using bmc = await startSushy({
      systems: Object.entries(systems).map(([name, uuid]) => ({ uuid, name, power: "On" })),
    });
    const dir = bmc.dir;
    await readableByTestUser(bmc.usernameFile, bmc.passwordFile);
    for (const name of WORKERS) {
      await registerNode(cp, name, {
        ready: false,
        initialized: true,
        providerID: `baremetal://${name}`,
      });
      await setNodeReady(cp, name, "Unknown");
      await cp.requestOk("POST", "/api/v1/namespaces/default/pods", {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: `p-${name}` },
        spec: { nodeName: name, containers: [{ name: "app", image: "registry.invalid/app:1" }] },
      });
    }
    for (const name of HOSTS) {
      await registerNode(cp, name, {
        initialized: true,
        providerID: `baremetal://${name}`,
        labels: { "node-role.kubernetes.io/control-plane": "" },
      });
    }
    await applyRbac(cp);
    const kubeconfigs: Record<string, string> = {};
    for (const host of HOSTS) {
      kubeconfigs[host] = `${dir}/${host}.kubeconfig`;
      await writeKubeconfig(kubeconfigs[host]!, cp.server, cp.caPem, "keelson", {
        token: await nodeBoundToken(cp, host),
      });
      await readableByTestUser(kubeconfigs[host]!);
    }
    await using _kcm = await startControllerManager(cp, {
      controllers: [
        "node-lifecycle-controller",
        "taint-eviction-controller",
        "pod-garbage-collector-controller",
      ],
    });
    const configPath = `${dir}/keelson.toml`;
    await Deno.writeTextFile(configPath, inventory(bmc, systems), { mode: 0o644 });
    let runs = 0;
    const start = (host: string) =>
      startKeelson({
        configPath,
        kubeconfig: kubeconfigs[host]!,
        dir,
        host,
        name: `${host}-${++runs}`,
        unprivileged: true,
      });

    const agents: Record<string, KeelsonProcess> = {};
    try {
      // cp-1 leads (it starts first, alone), cp-2 stands by
      agents["cp-1"] = await start("cp-1");
      await withLogs(
        [agents["cp-1"]],
        waitFor(
          async () =>
            await leads(agents["cp-1"]!) &&
            (await agents["cp-1"]!.metric('keelson_bmc_power_state{machine="w-1",state="on"}')) ===
              1,
          { timeoutMs: 90_000, message: "cp-1 leading and reading w-1's power as on" },
        ),
      );
      agents["cp-2"] = await start("cp-2");
      await withLogs(
        [agents["cp-2"]],
        waitFor(async () => (await agents["cp-2"]!.get("/healthz"))?.status === 200, {
          timeoutMs: 60_000,
          message: "cp-2 up (standing by)",
        }),
      );
      assert.equal(await leads(agents["cp-2"]), false);

      /**
       * Powers every worker off at once, kills the leader with `signal` after its first two taints
       * and waits for the other process to add the last two.
       */
      const round = async (leader: string, standby: string, signal: "SIGTERM" | "SIGKILL") => {
        const both = [agents[leader]!, agents[standby]!];
        await Promise.all(WORKERS.map((name) => bmc.reset(systems[name]!, "ForceOff")));
        const off = performance.now();
        const firstTwo = await withLogs(
          both,
          waitFor(async () => {
            const times = await taintTimes(cp);
            return times.size >= 2 ? times : undefined;
          }, { timeoutMs: FIRST_TAINTS_BOUND_MS, intervalMs: 100, message: "two taints" }),
        );
        agents[leader]!.process.kill(signal);
        const killed = performance.now();
        assert.equal(firstTwo.size, 2, `the leader added two taints, no more: ${[...firstTwo]}`);
        await agents[leader]!.stop();
        const all = await withLogs(
          both,
          waitFor(async () => {
            const times = await taintTimes(cp);
            return times.size === WORKERS.length ? times : undefined;
          }, {
            timeoutMs: LAST_TAINTS_BOUND_MS,
            intervalMs: 500,
            message: `${standby} adding the last two taints`,
          }),
        );
        assert.equal(await leads(agents[standby]!), true, `${standby} leads`);
        assert.equal(
          await agents[standby]!.metric("keelson_out_of_service_taints_applied_total"),
          2,
          `${standby} added the last two`,
        );
        const { sorted, most } = busiestWindow(all.values());
        const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
        figure(
          `${signal} to the leader ${s(killed - off)} after the ForceOff POSTs; taints at ` +
            `${sorted.map((ms) => `+${s(ms - sorted[0]!)}`).join(", ")} (cap 2 per 60 s)`,
        );
        assert.ok(
          most <= 2,
          `at most two taints in any minute: ${sorted.map((ms) => new Date(ms).toISOString())}`,
        );
        assert.ok(sorted[2]! - sorted[0]! >= WINDOW_MS, "the third a full minute after the first");
      };

      /** Powers the workers on and marks them Ready: Keelson removes its taints. */
      const recover = async (leader: KeelsonProcess) => {
        await Promise.all(WORKERS.map((name) => bmc.reset(systems[name]!, "On")));
        for (const name of WORKERS) await setNodeReady(cp, name, "True");
        await withLogs(
          [leader],
          waitFor(async () => {
            if ((await taintTimes(cp)).size > 0) return false;
            for (const name of WORKERS) {
              const on = await leader.metric(
                `keelson_bmc_power_state{machine="${name}",state="on"}`,
              );
              if (on !== 1) return false;
            }
            return true;
          }, {
            timeoutMs: 90_000,
            message: "the out-of-service taints removed and every machine's power seen on again",
          }),
        );
        for (const name of WORKERS) await setNodeReady(cp, name, "Unknown");
      };

      await t.step(
        "SIGTERM to the leader after two taints: the new leader waits out the minute",
        async () => {
          await round("cp-1", "cp-2", "SIGTERM");
        },
      );

      await t.step(
        "SIGKILL to the leader after two taints: the same, after the Lease expired",
        async () => {
          await recover(agents["cp-2"]!);
          // the untainted Nodes lost their markers; the record on the Lease still counts the taints
          // until the leader drops them a window after it added them
          await withLogs(
            [agents["cp-2"]!],
            waitFor(async () => {
              const lease = await cp.requestOk<V1Lease>("GET", LEASE_PATH);
              const record = JSON.parse(lease.metadata?.annotations?.[LEDGER] ?? "{}");
              return Array.isArray(record.taint) && record.taint.length === 0;
            }, { timeoutMs: 120_000, message: "the record's taints dropped after their window" }),
          );
          agents["cp-1"] = await start("cp-1");
          await withLogs(
            [agents["cp-1"]],
            waitFor(async () => (await agents["cp-1"]!.get("/healthz"))?.status === 200, {
              timeoutMs: 60_000,
              message: "cp-1 up again (standing by)",
            }),
          );
          await round("cp-2", "cp-1", "SIGKILL");
        },
      );
    } finally {
      await Promise.all(Object.values(agents).map((a) => a.stop()));
    }
  },
  missing,
);
