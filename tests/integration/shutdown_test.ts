/**
 * `keelson run` stops in bounded time on SIGTERM, on a real kube-apiserver, after its watches
 * carried thousands of events (before the fix: still running 10 s after SIGTERM, because an
 * aborted watch waited for its next byte).
 *
 * Figures are printed with a `FIGURE` prefix.
 */
import assert from "node:assert/strict";
import type { V1Lease } from "@kubernetes/client-node";
import { churn } from "./_harness/churn.ts";
import { type ControlPlane, integrationTest, startControlPlane } from "./_harness/control_plane.ts";
import { type KeelsonProcess, startKeelson } from "./_harness/keelson_process.ts";
import { waitFor } from "./_harness/kubelet.ts";
import { createNamespace, figure } from "./_harness/lb_services.ts";

const NAMESPACE = "churn";
/**
 * Churn of 3,000 patches in about 10 s made an agent whose aborted watch waited for its next byte
 * hang; here 3,000 take about 3 s and did not always make it hang, 10,000 (about 9 s) always did.
 */
const SERVICE_ONLY_PATCHES = 10_000;
const LEADING_PATCHES = 3_000;

/** A small valid inventory; keepalived is off (no network namespaces here). */
const INVENTORY = `
[cluster]
name = "it"

[keepalived]
enabled = false

[[pools]]
name = "lan"
addresses = ["192.0.2.0/28"]

[[machines]]
name = "cp-1"
role = "control-plane"
zone = "z1"
region = "r1"
internal_ips = ["10.0.0.11"]
`;
const SERVICES = 20;
/** Well inside the unit's TimeoutStopSec (20 s), so systemd never has to SIGKILL. */
const STOP_BOUND_MS = 2_000;

async function clusterIpServices(cp: ControlPlane): Promise<void> {
  await createNamespace(cp, NAMESPACE);
  for (let i = 0; i < SERVICES; i++) {
    await cp.requestOk("POST", `/api/v1/namespaces/${NAMESPACE}/services`, {
      metadata: { name: `svc-${i}` },
      spec: { type: "ClusterIP", selector: { app: `svc-${i}` }, ports: [{ port: 80 }] },
    });
  }
}

function churnServices(cp: ControlPlane, patches: number): Promise<number> {
  return churn({
    server: cp.server,
    token: cp.adminToken,
    caFile: `${cp.dir}/ca.crt`,
    collection: `/api/v1/namespaces/${NAMESPACE}/services`,
    prefix: "svc",
    objects: SERVICES,
    patches,
    concurrency: 8,
  });
}

/** Sends SIGTERM and waits for the exit (at most 30 s). */
async function sigterm(agent: KeelsonProcess): Promise<{ code: number | undefined; ms: number }> {
  const pid = agent.process.pid;
  assert.ok(pid, "the agent runs");
  const began = performance.now();
  Deno.kill(pid, "SIGTERM");
  const status = await Promise.race([
    agent.process.exited(),
    new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 30_000)),
  ]);
  return { code: status?.code, ms: performance.now() - began };
}

async function failWithLog(agent: KeelsonProcess, message: string): Promise<never> {
  throw new Error(`${message}\n--- agent log tail\n${(await agent.log()).slice(-3000)}`);
}

integrationTest(
  "keelson run (service controller only) exits 0 within 2 s of SIGTERM after 10,000 Service patches",
  async () => {
    await using cp = await startControlPlane();
    await clusterIpServices(cp);
    const dir = await Deno.makeTempDir({ prefix: "keelson-stop-" });
    const configPath = `${dir}/keelson.toml`;
    await Deno.writeTextFile(configPath, INVENTORY);
    const agent = await startKeelson({
      configPath,
      kubeconfig: cp.tokenKubeconfigPath,
      dir,
      args: ["--leader-elect=false", "--controllers=service"],
    });
    try {
      await waitFor(async () => (await agent.get("/readyz"))?.status === 200, {
        timeoutMs: 60_000,
        message: "readyz",
      });
      const seconds = await churnServices(cp, SERVICE_ONLY_PATCHES);
      figure(`${SERVICE_ONLY_PATCHES} Service patches in ${seconds.toFixed(1)} s`);
      const { code, ms } = await sigterm(agent);
      figure(`keelson run (service controller) exited ${code} ${ms.toFixed(0)} ms after SIGTERM`);
      if (code === undefined) await failWithLog(agent, "still running 30 s after SIGTERM");
      assert.equal(code, 0);
      assert.ok(ms < STOP_BOUND_MS, `exited ${ms.toFixed(0)} ms after SIGTERM`);
      assert.match(await agent.log(), /Stopped in \d+ ms/);
    } finally {
      await agent.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
);

integrationTest(
  "keelson run (every controller, leader election on) exits 0 within 2 s of SIGTERM after 3,000 Service patches and releases its Lease",
  async () => {
    await using cp = await startControlPlane();
    await clusterIpServices(cp);
    const dir = await Deno.makeTempDir({ prefix: "keelson-stop-" });
    const configPath = `${dir}/keelson.toml`;
    await Deno.writeTextFile(configPath, INVENTORY);
    const agent = await startKeelson({ configPath, kubeconfig: cp.tokenKubeconfigPath, dir });
    try {
      await waitFor(
        async () => (await agent.metric('leader_election_master_status{name="keelson"}')) === 1,
        { timeoutMs: 60_000, message: "the agent to lead" },
      );
      const seconds = await churnServices(cp, LEADING_PATCHES);
      figure(`${LEADING_PATCHES} Service patches in ${seconds.toFixed(1)} s`);
      const { code, ms } = await sigterm(agent);
      figure(
        `keelson run (all controllers, leading) exited ${code} ${ms.toFixed(0)} ms after SIGTERM`,
      );
      if (code === undefined) await failWithLog(agent, "still running 30 s after SIGTERM");
      assert.equal(code, 0);
      assert.ok(ms < STOP_BOUND_MS, `exited ${ms.toFixed(0)} ms after SIGTERM`);
      const lease = await cp.requestOk<V1Lease>(
        "GET",
        "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/keelson",
      );
      assert.equal(lease.spec?.holderIdentity ?? "", "", "the Lease was released");
    } finally {
      await agent.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
);
