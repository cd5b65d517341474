/**
 * Non-graceful node shutdown, automated, end to end: Keelson as it ships (the bundle, the baked
 * permissions, the unprivileged user) against a real kube-apiserver, a real Redfish server it did
 * not write (sushy-tools' emulator) and a real kube-controller-manager running its taint-eviction
 * and pod garbage-collector controllers. Nodes are NotReady from the start, as a dead kubelet
 * leaves them, each with a Pod bound to it.
 *
 * - `[power] out_of_service = false` (the default): a system powered off through Redfish gets
 *   its Node the shutdown taint, but never `node.kubernetes.io/out-of-service`, and its Pod stays.
 * - `out_of_service = true`: the next system powered off gets the out-of-service taint (with
 *   Keelson's marker and an Event); the taint-eviction controller marks its Pod terminating and
 *   Keelson force-deletes it at once (the pod garbage collector would at its next pass).
 * - The Node Ready again: Keelson removes the taint it added.
 * - `fencing = "on"`: a NotReady Node whose power still says On is forced off through Redfish
 *   (Events before and after), and then taken out of service.
 *
 * Power-off → taint and → Pod gone are printed with a `FIGURE` prefix (bounds here are generous).
 */
import assert from "node:assert/strict";
import type { CoreV1Event, V1Node, V1Pod } from "@kubernetes/client-node";
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
import { quietFor } from "./_harness/quiet.ts";

const OUT_OF_SERVICE = "node.kubernetes.io/out-of-service";
const SHUTDOWN_TAINT = "node.cloudprovider.kubernetes.io/shutdown";
const MARKER = "keelson.io/out-of-service-added";
/** The host Keelson runs on: a control-plane machine without a BMC, its Node Ready. */
const HOST = "cp-1";

/** Power-off → taint; the goal is well under 30 s with the defaults (a loaded machine here). */
const TAINT_BOUND_MS = 90_000;
/** Taint → Pod gone: the pod garbage collector runs every 20 s. */
const POD_BOUND_MS = 120_000;
/** How long the switched-off run watches after the shutdown taint, Pod still there. */
const SWITCH_OFF_WATCH_MS = 45_000;

const missing = await powerLabMissing();

function inventory(bmc: Sushy, systems: Record<string, string>, power: string): string {
  const machines = Object.entries(systems).map(([name, uuid]) => `
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
  return `
[cluster]
name = "oos"

[keepalived]
enabled = false

[controllers]
enabled = ["cloud-node-lifecycle", "out-of-service"]

[power]
${power}

[[machines]]
name = "${HOST}"
role = "control-plane"
${machines}`;
}

async function node(cp: ControlPlane, name: string): Promise<V1Node> {
  return await cp.requestOk<V1Node>("GET", `/api/v1/nodes/${name}`);
}

async function taintKeys(cp: ControlPlane, name: string): Promise<string[]> {
  return ((await node(cp, name)).spec?.taints ?? []).map((t) => `${t.key}:${t.effect}`);
}

async function pod(cp: ControlPlane, name: string): Promise<V1Pod | undefined> {
  const response = await cp.request<V1Pod>("GET", `/api/v1/namespaces/default/pods/${name}`);
  return response.status === 404 ? undefined : response.body;
}

async function events(cp: ControlPlane, name: string, reason: string): Promise<CoreV1Event[]> {
  const list = await cp.requestOk<{ items: CoreV1Event[] }>(
    "GET",
    `/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3D${name}`,
  );
  return list.items.filter((e) => e.reason === reason);
}

/** A Pod bound to `nodeName`, as the scheduler would have left it (no kubelet runs it). */
async function bindPod(cp: ControlPlane, name: string, nodeName: string): Promise<void> {
  await cp.requestOk("POST", "/api/v1/namespaces/default/pods", {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name },
    spec: {
      nodeName,
      containers: [{ name: "app", image: "registry.invalid/app:1" }],
    },
  });
}

async function withLog<T>(agent: KeelsonProcess, work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    throw new Error(`${error}\n--- keelson log tail\n${(await agent.log()).slice(-4000)}`);
  }
}

integrationTest(
  "power off through Redfish: out-of-service taint and the Pod force-deleted with the switch on; shutdown taint only and the Pod stays with it off",
  async (t) => {
    const systems = {
      "w-1": crypto.randomUUID(),
      "w-2": crypto.randomUUID(),
      "w-3": crypto.randomUUID(),
    };
    await using cp = await startControlPlane();
    await using bmc = await startSushy({
      systems: Object.entries(systems).map(([name, uuid]) => ({ uuid, name, power: "On" })),
    });
    const dir = bmc.dir;
    await readableByTestUser(bmc.usernameFile, bmc.passwordFile);
    for (const name of Object.keys(systems)) {
      await registerNode(cp, name, {
        ready: false,
        initialized: true,
        providerID: `baremetal://${name}`,
      });
      // kube-controller-manager's verdict on a kubelet that stopped posting
      await setNodeReady(cp, name, "Unknown");
      await bindPod(cp, `p-${name}`, name);
    }
    await registerNode(cp, HOST, {
      initialized: true,
      providerID: `baremetal://${HOST}`,
      labels: { "node-role.kubernetes.io/control-plane": "" },
    });
    // Keelson's own credential and deploy/rbac.yaml, as installed (a token bound to its host's Node)
    await applyRbac(cp);
    const kubeconfig = `${dir}/keelson.kubeconfig`;
    await writeKubeconfig(kubeconfig, cp.server, cp.caPem, "keelson", {
      token: await nodeBoundToken(cp, HOST),
    });
    await readableByTestUser(kubeconfig);
    await using kcm = await startControllerManager(cp, {
      // taint-eviction evicts (deletionTimestamp), pod GC force-deletes what is Terminating on an
      // out-of-service Node; the node-lifecycle controller adds the pods' node-name index the
      // taint-eviction controller reads
      controllers: [
        "node-lifecycle-controller",
        "taint-eviction-controller",
        "pod-garbage-collector-controller",
      ],
    });
    const configPath = `${dir}/keelson.toml`;

    const start = async (power: string, name: string): Promise<KeelsonProcess> => {
      await Deno.writeTextFile(configPath, inventory(bmc, systems, power), { mode: 0o644 });
      const agent = await startKeelson({
        configPath,
        kubeconfig,
        dir,
        host: HOST,
        name,
        unprivileged: true,
      });
      await withLog(
        agent,
        waitFor(
          async () =>
            (await agent.metric('keelson_bmc_power_state{machine="w-1",state="on"}')) === 1 &&
            (await agent.metric("keelson_out_of_service_taints_applied_total")) === 0,
          {
            timeoutMs: 60_000,
            message: "Keelson leading and reading w-1's power as on",
          },
        ),
      );
      return agent;
    };

    await t.step(
      "switch off: w-2 powered off gets the shutdown taint only; its Pod stays",
      async () => {
        await using agent = await start("out_of_service = false", "switch-off");
        await bmc.reset(systems["w-2"], "ForceOff");
        const off = await bmc.waitForPower(systems["w-2"], "Off");
        await withLog(
          agent,
          waitFor(
            async () => (await taintKeys(cp, "w-2")).includes(`${SHUTDOWN_TAINT}:NoSchedule`),
            {
              timeoutMs: TAINT_BOUND_MS,
              intervalMs: 100,
              message: "the shutdown taint on w-2 (Keelson saw the power off)",
            },
          ),
        );
        const tainted = performance.now();
        // watched: an out-of-service taint on w-2 or a delete of its Pod fails at once
        await quietFor(cp, {
          what: "w-2 switched off",
          paths: ["/api/v1/nodes", "/api/v1/pods"],
          forMs: SWITCH_OFF_WATCH_MS,
          unwanted: (write) =>
            write.key === "w-2" &&
              ((write.object as V1Node).spec?.taints ?? []).some((t) => t.key === OUT_OF_SERVICE) ||
            write.key.endsWith("/p-w-2") &&
              (write.type === "DELETED" ||
                (write.object as V1Pod).metadata?.deletionTimestamp !== undefined),
        });
        const keys = await taintKeys(cp, "w-2");
        assert.ok(!keys.some((k) => k.startsWith(OUT_OF_SERVICE)), `no out-of-service: ${keys}`);
        const p = await pod(cp, "p-w-2");
        assert.ok(p, "the Pod bound to w-2 is still there");
        assert.equal(p.metadata?.deletionTimestamp, undefined);
        assert.equal(await agent.metric("keelson_out_of_service_taints_applied_total"), 0);
        figure(
          `switch off: w-2 off ${
            ((performance.now() - off) / 1000).toFixed(1)
          } s (shutdown taint ` +
            `after ${((tainted - off) / 1000).toFixed(1)} s): no out-of-service taint, Pod p-w-2 ` +
            "still there",
        );
        await agent.stop();
      },
    );

    await t.step(
      "switch on: w-1 powered off gets out-of-service and its Pod is force-deleted",
      async (t) => {
        await using agent = await start("out_of_service = true", "switch-on");
        const posted = performance.now();
        await bmc.reset(systems["w-1"], "ForceOff");
        const off = await bmc.waitForPower(systems["w-1"], "Off");
        const tainted = await withLog(
          agent,
          waitFor(
            async () =>
              (await taintKeys(cp, "w-1")).includes(`${OUT_OF_SERVICE}:NoExecute`)
                ? performance.now()
                : undefined,
            {
              timeoutMs: TAINT_BOUND_MS,
              intervalMs: 100,
              message: "the out-of-service taint on w-1",
            },
          ),
        );
        const gone = await waitFor(
          async () => (await pod(cp, "p-w-1")) === undefined ? performance.now() : undefined,
          { timeoutMs: POD_BOUND_MS, intervalMs: 100, message: "Pod p-w-1 force-deleted" },
        ).catch(async (error) => {
          throw new Error(
            `${error}\n--- kube-controller-manager log tail\n${await kcm.process.logTail()}`,
          );
        });
        const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
        figure(
          `power-off -> out-of-service taint: ${s(tainted - off)} after sushy first answered Off ` +
            `(${
              s(tainted - posted)
            } after the ForceOff POST; sushy applies a reset 1-11 s late); ` +
            "defaults: poll_interval 5s, confirm_off_for 5s",
        );
        figure(
          `power-off -> Pod gone: ${s(gone - off)} after sushy answered Off (taint -> Pod gone ` +
            `${s(gone - tainted)}; Keelson force-deletes terminating Pods of a Node it tainted)`,
        );
        const n = await node(cp, "w-1");
        const taint = n.spec?.taints?.find((t) => t.key === OUT_OF_SERVICE);
        assert.equal(taint?.value, "nodeshutdown");
        assert.ok(n.metadata?.annotations?.[MARKER], "Keelson's marker is on the Node");
        // the lifecycle controller's shutdown taint comes on its own schedule (two Off answers in
        // a row, its monitor period): it may follow the out-of-service taint
        await withLog(
          agent,
          waitFor(
            async () => (await taintKeys(cp, "w-1")).includes(`${SHUTDOWN_TAINT}:NoSchedule`),
            { timeoutMs: 60_000, message: "the shutdown taint on w-1" },
          ),
        );
        const [event] = await events(cp, "w-1", "OutOfServiceTainted");
        assert.match(event?.message ?? "", /Ready condition Unknown; power off since .*PowerState/);
        assert.ok((await agent.metric("keelson_out_of_service_taints_applied_total"))! >= 1);

        await t.step("Ready again: Keelson removes the taint it added", async () => {
          await bmc.reset(systems["w-1"], "On");
          await setNodeReady(cp, "w-1", "True");
          await withLog(
            agent,
            waitFor(
              async () => !(await taintKeys(cp, "w-1")).some((k) => k.startsWith(OUT_OF_SERVICE)),
              {
                timeoutMs: 60_000,
                message: "the out-of-service taint removed from w-1",
              },
            ),
          );
          assert.equal((await node(cp, "w-1")).metadata?.annotations?.[MARKER], undefined);
          assert.equal((await events(cp, "w-1", "OutOfServiceTaintRemoved")).length, 1);
        });
        await agent.stop();
      },
    );

    await t.step(
      "fencing on: w-3, NotReady with its power still On, is forced off through Redfish, then taken out of service",
      async () => {
        const started = performance.now();
        await using agent = await start(
          'out_of_service = true\nfencing = "on"\nfence_after = "30s"',
          "fencing",
        );
        const fenced = await withLog(
          agent,
          waitFor(
            async () =>
              (await events(cp, "w-3", "FencedNode")).length > 0 ? performance.now() : undefined,
            { timeoutMs: 120_000, intervalMs: 100, message: "the FencedNode Event on w-3" },
          ),
        );
        const [before] = await events(cp, "w-3", "FencingNode");
        assert.match(before?.message ?? "", /Forcing node w-3's machine .*power on since/);
        const off = await bmc.waitForPower(systems["w-3"], "Off", 60_000);
        const tainted = await withLog(
          agent,
          waitFor(
            async () =>
              (await taintKeys(cp, "w-3")).includes(`${OUT_OF_SERVICE}:NoExecute`)
                ? performance.now()
                : undefined,
            { timeoutMs: TAINT_BOUND_MS, intervalMs: 100, message: "out-of-service on w-3" },
          ),
        );
        assert.ok(
          (await agent.metric('keelson_power_fencing_actions_total{result="powered_off"}'))! >= 1,
        );
        const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
        figure(
          `fencing (fence_after 30s): ForceOff ${
            s(fenced - started)
          } after Keelson was started (it first saw w-3 NotReady on becoming leader); ` +
            `sushy Off ${s(off - fenced)} later; out-of-service taint ${
              s(tainted - off)
            } after that`,
        );
        await agent.stop();
      },
    );
  },
  missing,
);
