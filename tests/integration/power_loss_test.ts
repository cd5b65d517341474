/**
 * A Ready worker losing its power, end to end: Keelson as it ships (the bundle, the baked
 * permissions, the unprivileged user, deploy/rbac.yaml) against a real kube-apiserver, a real
 * kube-controller-manager (node lifecycle, taint eviction, pod garbage collector) and a real
 * Redfish server it did not write (sushy-tools). Each worker has a fake kubelet that renews its
 * node Lease every 10 s, as kubelet does, while its sushy system is On; a machine powered off
 * stops renewing with it. kube-controller-manager alone would call such a Node NotReady only
 * after its grace period (50 s), and its pod garbage collector force-deletes only on a Node that
 * is not Ready, and only every 20 s.
 *
 * - Several workers lose their power one after the other, each at a random phase of the pod
 *   garbage collector's period: each is marked NotReady by Keelson (the BMC's confirmed Off and
 *   the silent Lease), taken out of service, and its Pod, marked terminating by the
 *   taint-eviction controller, is force-deleted by Keelson at once (its Event on the Pod says
 *   so). Asserted: the Pod gone within 30 s of the power loss, every run. Power loss → taint and
 *   → Pod gone are printed per run and as min/median/max (`FIGURE`).
 * - A Pod that tolerates the out-of-service taint on the first worker is never marked
 *   terminating, and Keelson never deletes it; the Pods of the other workers stay until their
 *   own machine loses power.
 * - A machine whose BMC says Off from the start while its kubelet goes on renewing (a BMC that
 *   answers for another machine) is never marked NotReady nor tainted, for longer than the
 *   grace period and Keelson's own mismatch grace.
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
import { type LeaseRenewal, registerNode, startLeaseRenewal } from "./_harness/kubelet.ts";
import { figure } from "./_harness/lb_services.ts";
import { readableByTestUser } from "./_harness/shipped_keelson.ts";
import { startSushy, type Sushy } from "./_harness/sushy.ts";
import { waitFor } from "./_harness/wait.ts";
import { quietFor } from "./_harness/quiet.ts";

const OUT_OF_SERVICE = "node.kubernetes.io/out-of-service";
/** The host Keelson runs on: a control-plane machine without a BMC, its kubelet renewing. */
const HOST = "cp-1";
/** Workers that lose their power, one per run. */
const RUNS = ["w-1", "w-2", "w-3", "w-4", "w-5"];
/** A worker whose BMC says Off while its kubelet keeps renewing. */
const LIAR = "w-9";
/** The requirement, asserted on every run: Pod gone within this of a power loss. */
const GOAL_MS = 30_000;
/** How long a wait may last before it fails (the assertion on the figure is `GOAL_MS`). */
const WAIT_MS = 45_000;
/** A Pod on the first worker that tolerates the out-of-service taint: never deleted. */
const TOLERANT = "tolerant-w-1";
/** kube-controller-manager's pod garbage collector's period (gcCheckPeriod). */
const GC_PERIOD_MS = 20_000;
/** How long the liar must have been watched: the grace period and Keelson's mismatch grace. */
const LIAR_WATCH_MS = 70_000;

const missing = await powerLabMissing();

function inventory(bmc: Sushy, systems: Record<string, string>): string {
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
name = "power-loss"

[keepalived]
enabled = false

[controllers]
enabled = ["out-of-service"]

[power]
out_of_service = true
# one taint per run, several runs a minute: the cap is not what this test measures
max_actions_per_interval = 20

[[machines]]
name = "${HOST}"
role = "control-plane"
${machines}`;
}

async function node(cp: ControlPlane, name: string): Promise<V1Node> {
  return await cp.requestOk<V1Node>("GET", `/api/v1/nodes/${name}`);
}

function readyOf(n: V1Node) {
  return n.status?.conditions?.find((c) => c.type === "Ready");
}

async function hasOutOfService(cp: ControlPlane, name: string): Promise<boolean> {
  return ((await node(cp, name)).spec?.taints ?? []).some((t) => t.key === OUT_OF_SERVICE);
}

async function podGone(cp: ControlPlane, name: string): Promise<boolean> {
  return (await cp.request<V1Pod>("GET", `/api/v1/namespaces/default/pods/${name}`)).status ===
    404;
}

async function events(cp: ControlPlane, name: string, reason: string): Promise<CoreV1Event[]> {
  const list = await cp.requestOk<{ items: CoreV1Event[] }>(
    "GET",
    `/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3D${name}`,
  );
  return list.items.filter((e) => e.reason === reason);
}

/** A Pod bound to `nodeName`, as the scheduler would have left it (no kubelet runs it). */
async function bindPod(
  cp: ControlPlane,
  name: string,
  nodeName: string,
  tolerations: Record<string, string>[] = [],
): Promise<void> {
  await cp.requestOk("POST", "/api/v1/namespaces/default/pods", {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name },
    spec: {
      nodeName,
      containers: [{ name: "app", image: "registry.invalid/app:1" }],
      tolerations,
    },
  });
}

async function deletionTimestampOf(cp: ControlPlane, name: string): Promise<string | undefined> {
  const pod = await cp.requestOk<V1Pod>("GET", `/api/v1/namespaces/default/pods/${name}`);
  return pod.metadata?.deletionTimestamp as unknown as string | undefined;
}

async function withLogs<T>(agent: KeelsonProcess, work: Promise<T>, kcm?: string): Promise<T> {
  try {
    return await work;
  } catch (error) {
    throw new Error(
      `${error}\n--- keelson log tail\n${(await agent.log()).slice(-4000)}` +
        (kcm ? `\n--- kube-controller-manager log tail\n${kcm}` : ""),
    );
  }
}

function summary(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const middle = sorted.length / 2;
  const median = sorted.length % 2
    ? sorted[Math.floor(middle)]!
    : (sorted[middle - 1]! + sorted[middle]!) / 2;
  return `min ${s(sorted[0]!)} / median ${s(median)} / max ${s(sorted.at(-1)!)} ` +
    `over ${sorted.length} runs`;
}

integrationTest(
  "a Ready worker losing its power, its kubelet Lease stopping with it: marked NotReady and out of service, its Pod force-deleted by Keelson within 30 s of the loss, a Pod tolerating the taint kept; a machine still renewing while its BMC says Off is never touched",
  async (t) => {
    const systems: Record<string, string> = Object.fromEntries(
      [...RUNS, LIAR].map((name) => [name, crypto.randomUUID()]),
    );
    await using cp = await startControlPlane();
    await using bmc = await startSushy({
      systems: Object.entries(systems).map(([name, uuid]) => ({ uuid, name, power: "On" })),
    });
    const dir = bmc.dir;
    await readableByTestUser(bmc.usernameFile, bmc.passwordFile);
    await registerNode(cp, HOST, {
      initialized: true,
      providerID: `baremetal://${HOST}`,
      labels: { "node-role.kubernetes.io/control-plane": "" },
    });
    for (const name of Object.keys(systems)) {
      await registerNode(cp, name, { initialized: true, providerID: `baremetal://${name}` });
      await bindPod(cp, `p-${name}`, name);
    }
    await bindPod(cp, TOLERANT, RUNS[0]!, [{
      key: OUT_OF_SERVICE,
      operator: "Exists",
      effect: "NoExecute",
    }]);
    // the kubelets: each renews while its machine runs; the liar's whatever its BMC says
    const kubelets = new Map<string, LeaseRenewal>();
    kubelets.set(HOST, await startLeaseRenewal(cp, HOST));
    for (const [name, uuid] of Object.entries(systems)) {
      kubelets.set(
        name,
        await startLeaseRenewal(cp, name, {
          ...(name === LIAR ? {} : { running: async () => (await bmc.powerState(uuid)) === "On" }),
        }),
      );
    }
    try {
      await applyRbac(cp);
      const kubeconfig = `${dir}/keelson.kubeconfig`;
      await writeKubeconfig(kubeconfig, cp.server, cp.caPem, "keelson", {
        token: await nodeBoundToken(cp, HOST),
      });
      await readableByTestUser(kubeconfig);
      await using kcm = await startControllerManager(cp, {
        controllers: [
          "node-lifecycle-controller",
          "taint-eviction-controller",
          "pod-garbage-collector-controller",
        ],
      });
      const configPath = `${dir}/keelson.toml`;
      await Deno.writeTextFile(configPath, inventory(bmc, systems), { mode: 0o644 });

      // the liar's BMC says Off from now on; its kubelet keeps renewing
      await bmc.reset(systems[LIAR]!, "ForceOff");
      await using agent = await startKeelson({
        configPath,
        kubeconfig,
        dir,
        host: HOST,
        name: "power-loss",
        unprivileged: true,
      });
      await withLogs(
        agent,
        waitFor(
          async () =>
            (await agent.metric('keelson_bmc_power_state{machine="w-1",state="on"}')) === 1,
          { timeoutMs: 60_000, message: "Keelson leading and reading w-1's power as on" },
        ),
      );
      const liarOff = await bmc.waitForPower(systems[LIAR]!, "Off");
      // a leader sees every kubelet renew once before it may judge a silence (10 s interval)
      const leading = performance.now();
      await waitFor(() => performance.now() - leading > 12_000, {
        timeoutMs: 20_000,
        message: "a renewal interval",
      });

      const toGone: number[] = [];
      const toTaint: number[] = [];
      for (const name of RUNS) {
        await t.step(`${name} loses its power: Pod gone`, async () => {
          let before = true;
          for (const other of RUNS) {
            if (other === name) before = false;
            assert.equal(await podGone(cp, `p-${other}`), before, `p-${other} gone: ${before}`);
          }
          assert.equal(readyOf(await node(cp, name))?.status, "True", `${name} Ready before`);
          // the pod garbage collector runs every 20 s and the previous run ended at one of its
          // passes: a random pause, so the loss falls at any phase of it, as a real one does
          await new Promise((resolve) => setTimeout(resolve, Math.random() * GC_PERIOD_MS));
          await bmc.reset(systems[name]!, "ForceOff");
          // the loss: the first Off answer (polled every 100 ms); its kubelet renews no more
          const off = await bmc.waitForPower(systems[name]!, "Off");
          const lastRenewal = kubelets.get(name)!.lastRenewedAt;
          const tainted = await withLogs(
            agent,
            waitFor(
              async () => await hasOutOfService(cp, name) ? performance.now() : undefined,
              { timeoutMs: WAIT_MS, intervalMs: 100, message: `out-of-service on ${name}` },
            ),
          );
          const gone = await withLogs(
            agent,
            waitFor(
              async () => await podGone(cp, `p-${name}`) ? performance.now() : undefined,
              { timeoutMs: WAIT_MS, intervalMs: 100, message: `Pod p-${name} gone` },
            ),
            await kcm.process.logTail(),
          );
          const ready = readyOf(await node(cp, name));
          const [lost] = await events(cp, name, "NodePowerLoss");
          assert.ok(lost, `Keelson's NodePowerLoss Event on ${name}`);
          assert.match(lost.message ?? "", /not renewed Lease kube-node-lease\/w-\d/);
          assert.equal(ready?.status, "Unknown");
          // Keelson deleted it, at once, not kube-controller-manager's next pass
          const [deleted] = await events(cp, `p-${name}`, "OutOfServicePodDeleted");
          assert.ok(deleted, `Keelson's OutOfServicePodDeleted Event on p-${name}`);
          assert.match(deleted.message ?? "", new RegExp(`on node ${name}: Keelson added`));
          const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
          figure(
            `power loss of Ready ${name} -> out-of-service taint ${s(tainted - off)}, -> Pod ` +
              `gone ${s(gone - off)} (taint -> gone ${s(gone - tainted)}; last kubelet renewal ${
                lastRenewal === undefined ? "none" : s(off - lastRenewal)
              } before the loss; defaults: poll_interval 5s, confirm_off_for 5s, ` +
              "kubelet_lease_silence 15s)",
          );
          toTaint.push(tainted - off);
          toGone.push(gone - off);
          assert.ok(gone - off < GOAL_MS, `Pod p-${name} gone ${s(gone - off)} after the loss`);
        });
      }
      figure(`power loss -> out-of-service taint: ${summary(toTaint)}`);
      figure(
        `power loss -> Pod gone: ${summary(toGone)}; ` +
          `${toGone.filter((ms) => ms < GOAL_MS).length} of ${toGone.length} under 30 s`,
      );

      await t.step(
        `${TOLERANT}, tolerating the taint, is neither terminating nor deleted`,
        async () => {
          assert.equal(await podGone(cp, TOLERANT), false);
          assert.equal(await deletionTimestampOf(cp, TOLERANT), undefined);
          assert.deepEqual(await events(cp, TOLERANT, "OutOfServicePodDeleted"), []);
        },
      );

      await t.step(
        `${LIAR}, Off at its BMC but its kubelet renewing, is never marked nor tainted`,
        async () => {
          // the rest of the watch, watched: a NotReady or an out-of-service taint fails at once
          const watched = performance.now() - liarOff;
          await quietFor(cp, {
            what: `${LIAR}, renewing`,
            paths: ["/api/v1/nodes"],
            forMs: Math.max(0, LIAR_WATCH_MS - watched),
            unwanted: (write) =>
              write.key === LIAR &&
              (readyOf(write.object as V1Node)?.status !== "True" ||
                ((write.object as V1Node).spec?.taints ?? []).some((t) =>
                  t.key === OUT_OF_SERVICE
                )),
          });
          const n = await node(cp, LIAR);
          assert.equal(readyOf(n)?.status, "True");
          assert.ok(!(n.spec?.taints ?? []).some((t) => t.key === OUT_OF_SERVICE));
          assert.deepEqual(await events(cp, LIAR, "NodePowerLoss"), []);
          assert.deepEqual(await events(cp, LIAR, "OutOfServiceTainted"), []);
          assert.equal(await podGone(cp, `p-${LIAR}`), false);
          assert.deepEqual(await events(cp, `p-${LIAR}`, "OutOfServicePodDeleted"), []);
          assert.ok(kubelets.get(LIAR)!.renewals > 3, "the liar's kubelet renewed all along");
          figure(
            `${LIAR}: BMC Off for ${
              ((performance.now() - liarOff) / 1000).toFixed(0)
            } s with its kubelet renewing: Ready, not tainted`,
          );
        },
      );
      await agent.stop();
    } finally {
      for (const kubelet of kubelets.values()) await kubelet.stop();
    }
  },
  missing,
);
