/**
 * deploy/rbac-host.yaml and deploy/rbac-host-worker.yaml against a real kube-apiserver in RBAC
 * mode: a worker that serves a pool runs `keelson run` (as it ships) in host-side mode with only
 * its own narrow credential (a token of its ServiceAccount bound to its Node), syncs its caches,
 * renders the pool's VIP, writes its heartbeat and is refused nothing; and that credential is
 * refused what the control plane's (deploy/rbac.yaml) may do: patching Nodes, writing Service
 * status, deleting Pods, reading PersistentVolumes, writing any Lease but its own heartbeat.
 * OwnerReferencesPermissionEnforcement is on, so the heartbeat naming its Node as owner shows the
 * Lease's `delete` by name suffices.
 */
import assert from "node:assert/strict";
import type { V1Lease, V1Node } from "@kubernetes/client-node";
import { fileURLToPath } from "node:url";
import { type ControlPlane, integrationTest, startControlPlane } from "./_harness/control_plane.ts";
import { type KeelsonProcess, startKeelson } from "./_harness/keelson_process.ts";
import { registerNode, waitFor } from "./_harness/kubelet.ts";
import { applyRbac } from "./_harness/credentials.ts";
import { writeKubeconfig } from "./_harness/kubeconfig.ts";
import { createObject, describeObject, loadManifests } from "./_harness/manifests.ts";
import { signedCert } from "./_harness/pki.ts";
import { type ShippedDirs, shippedDirs } from "./_harness/shipped_keelson.ts";
import { decodeHostReport } from "../../src/status/host_report.ts";

const DEPLOY = fileURLToPath(new URL("../../deploy/", import.meta.url));
const LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases";
const VIP = "192.0.2.1";

/** A control-plane machine and the worker w-1, which alone serves the pool `edge`. */
function inventory(dirs: ShippedDirs): string {
  return `
[cluster]
name = "host-rbac"

[keepalived]
config_file = "${dirs.keepalived}/keelson.conf"
track_file_dir = "${dirs.track}"
# any command that exits 0 stands in for \`keepalived -t -f\`: no keepalived runs here
check_command = ["true"]

[[pools]]
name = "edge"
addresses = ["192.0.2.0/30"]
[pools.served_by]
roles = ["worker"]

[[machines]]
name = "cp-1"
role = "control-plane"
internal_ips = ["10.0.0.11"]

[[machines]]
name = "w-1"
role = "worker"
internal_ips = ["10.0.0.21"]
`;
}

/**
 * Creates every object of a manifest file as the admin, `worker-1` renamed `worker`.
 * @returns "Kind namespace/name" of each object, in file order
 */
async function apply(cp: ControlPlane, file: string, worker = "worker-1"): Promise<string[]> {
  const text = await Deno.readTextFile(`${DEPLOY}${file}`);
  const renamed = `${await Deno.makeTempDir({ prefix: "keelson-host-rbac-" })}/${file}`;
  await Deno.writeTextFile(renamed, text.replaceAll("worker-1", worker));
  const applied: string[] = [];
  for (const object of await loadManifests(renamed)) {
    const response = await createObject(cp, object);
    assert.equal(
      response.status,
      201,
      `${describeObject(object)}: ${JSON.stringify(response.body)}`,
    );
    applied.push(describeObject(object));
  }
  await Deno.remove(renamed.slice(0, renamed.lastIndexOf("/")), { recursive: true });
  return applied;
}

/** A token of ServiceAccount `keelson-host-<node>` bound to Node `node`. */
async function workerToken(cp: ControlPlane, node: string): Promise<string> {
  const n = await cp.requestOk<V1Node>("GET", `/api/v1/nodes/${node}`);
  const response = await cp.requestOk<{ status: { token: string } }>(
    "POST",
    `/api/v1/namespaces/kube-system/serviceaccounts/keelson-host-${node}/token`,
    {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      spec: {
        expirationSeconds: 3600,
        boundObjectRef: { apiVersion: "v1", kind: "Node", name: node, uid: n.metadata!.uid },
      },
    },
  );
  return response.status.token;
}

/** `waitFor` whose timeout error ends with the agent's log tail. */
async function waitWithLog<T>(
  agent: KeelsonProcess,
  what: string,
  predicate: () => Promise<T | undefined>,
  timeoutMs = 60_000,
): Promise<T> {
  try {
    return await waitFor(predicate, { timeoutMs, message: what });
  } catch (error) {
    throw new Error(`${String(error)}\nkeelson log tail:\n${(await agent.log()).slice(-4000)}`);
  }
}

const lease = (name: string, holder = name) => ({
  apiVersion: "coordination.k8s.io/v1",
  kind: "Lease",
  metadata: { name, namespace: "kube-system" },
  spec: { holderIdentity: holder },
});

integrationTest(
  "deploy/rbac-host.yaml: a worker in host-side mode runs with only its own credential; that credential is refused what the control plane's may do",
  async (t) => {
    // as on clusters that enforce it: naming the Node as the heartbeat's owner then needs delete
    await using cp = await startControlPlane({
      apiserverArgs: ["--enable-admission-plugins=OwnerReferencesPermissionEnforcement"],
    });

    await t.step("the shared role and one worker's objects are created", async () => {
      assert.deepEqual(await apply(cp, "rbac-host.yaml"), [
        "ClusterRole system:keelson-host",
        "ValidatingAdmissionPolicy keelson-host-lease-writes",
        "ValidatingAdmissionPolicyBinding keelson-host-lease-writes",
      ]);
      assert.deepEqual(await apply(cp, "rbac-host-worker.yaml", "w-1"), [
        "ServiceAccount kube-system/keelson-host-w-1",
        "ClusterRoleBinding system:keelson-host:w-1",
        "Role kube-system/keelson-host-w-1",
        "RoleBinding kube-system/keelson-host-w-1",
      ]);
      // the control plane's access too, to show what the worker's lacks
      await applyRbac(cp);
    });

    // The cluster as the worker finds it: Nodes, a PersistentVolume, a Pod, and a Service the
    // leader (not running here) gave an address of the worker's pool.
    await registerNode(cp, "w-1", { providedNodeIp: "10.0.0.21", initialized: true });
    await registerNode(cp, "cp-1", { providedNodeIp: "10.0.0.11", initialized: true });
    await cp.requestOk("POST", "/api/v1/persistentvolumes", {
      metadata: { name: "pv-1" },
      spec: {
        capacity: { storage: "1Gi" },
        accessModes: ["ReadWriteOnce"],
        hostPath: { path: "/tmp/pv-1" },
      },
    });
    await cp.requestOk("POST", "/api/v1/namespaces/default/pods", {
      metadata: { name: "p-1" },
      spec: { nodeName: "w-1", containers: [{ name: "app", image: "registry.invalid/app:1" }] },
    });
    await cp.requestOk("POST", "/api/v1/namespaces/default/services", {
      metadata: { name: "web" },
      spec: { type: "LoadBalancer", selector: { app: "web" }, ports: [{ port: 80 }] },
    });
    await cp.requestOk("PATCH", "/api/v1/namespaces/default/services/web/status", {
      metadata: { annotations: { "keelson.io/allocated-from-pool": "edge" } },
      status: { loadBalancer: { ingress: [{ ip: VIP, ipMode: "VIP" }] } },
    });
    // the leader's Lease and another host's heartbeat, written by their owners
    await cp.requestOk("POST", LEASES, lease("keelson", "cp-1_0"));
    await cp.requestOk("POST", LEASES, lease("keelson-host-cp-1", "cp-1"));

    const token = await workerToken(cp, "w-1");
    const asWorker = (method: string, path: string, body?: unknown, type?: string) =>
      cp.request(method, path, body, type, token);

    const dir = await Deno.makeTempDir({ prefix: "keelson-host-rbac-" });
    const configPath = `${dir}/keelson.toml`;
    // under the paths the binary may write (its baked permissions)
    await using dirs = await shippedDirs();
    await Deno.writeTextFile(configPath, inventory(dirs));
    const kubeconfig = `${dir}/w-1.kubeconfig`;
    await writeKubeconfig(kubeconfig, cp.server, cp.caPem, "keelson-host-w-1", { token });
    await using agent = await startKeelson({ configPath, kubeconfig, host: "w-1", dir });
    try {
      await t.step("it starts in host-side mode and its caches sync (/readyz)", async () => {
        await waitWithLog(
          agent,
          "host-side mode in the log",
          async () => /host-side mode/.test(await agent.log()) || undefined,
        );
        await waitWithLog(
          agent,
          "/readyz 200",
          async () => (await agent.get("/readyz"))?.status === 200 || undefined,
        );
      });

      await t.step("it serves its pool: the VIP is in the keepalived file it staged", async () => {
        const staged = `${dirs.track}/stage/keepalived.conf`;
        const text = await waitWithLog(agent, `${VIP} in ${staged}`, async () => {
          const t = await Deno.readTextFile(staged).catch(() => "");
          return t.includes(VIP) ? t : undefined;
        });
        assert.match(text, /Generated by Keelson for host w-1/);
      });

      await t.step(
        "its heartbeat Lease keelson-host-w-1 is written and owned by its Node",
        async () => {
          const node = await cp.requestOk<V1Node>("GET", "/api/v1/nodes/w-1");
          const written = await waitWithLog(agent, "heartbeat keelson-host-w-1", async () => {
            const l = await cp.request<V1Lease>("GET", `${LEASES}/keelson-host-w-1`);
            return l.status === 200 && l.body.metadata?.ownerReferences?.length
              ? l.body
              : undefined;
          });
          assert.equal(written.spec!.holderIdentity, "w-1");
          assert.deepEqual(written.metadata!.ownerReferences, [
            { apiVersion: "v1", kind: "Node", name: "w-1", uid: node.metadata!.uid },
          ]);
          const report = decodeHostReport(written.metadata!.annotations!["keelson.io/data-plane"]!);
          assert.ok(!("error" in report) && report.host === "w-1", JSON.stringify(report));
          // renewed: the worker may update it, not only create it
          const renewed = await waitWithLog(agent, "a renewal of the heartbeat", async () => {
            const l = await cp.request<V1Lease>("GET", `${LEASES}/keelson-host-w-1`);
            return l.body.spec?.renewTime !== written.spec?.renewTime ? l.body : undefined;
          });
          assert.equal(renewed.spec!.holderIdentity, "w-1");
        },
      );

      await t.step("no request of the worker was refused; it never campaigned", async () => {
        const log = await agent.log();
        assert.doesNotMatch(log, /forbidden|\b403\b/i, log.slice(-4000));
        const leader = await cp.requestOk<V1Lease>("GET", `${LEASES}/keelson`);
        assert.equal(leader.spec!.holderIdentity, "cp-1_0");
      });
    } finally {
      await agent.stop();
      await Deno.remove(dir, { recursive: true });
    }

    await t.step(
      "the worker's credential is refused what the control plane's may do",
      async () => {
        const dry = "?dryRun=All";
        const nodeLabel = { metadata: { labels: { "example.com/x": "y" } } };
        const ingress = { status: { loadBalancer: { ingress: [{ ip: "192.0.2.2" }] } } };
        const leaderLease = await cp.requestOk<V1Lease>("GET", `${LEASES}/keelson`);
        const otherHeartbeat = await cp.requestOk<V1Lease>("GET", `${LEASES}/keelson-host-cp-1`);
        // each allowed to deploy/rbac.yaml's identity (cp.keelsonToken), refused to the worker's
        const both: Array<[string, string, unknown?]> = [
          ["PATCH", `/api/v1/nodes/w-1${dry}`, nodeLabel],
          ["PATCH", `/api/v1/nodes/w-1/status${dry}`, { status: { addresses: [] } }],
          ["PATCH", `/api/v1/namespaces/default/services/web/status${dry}`, ingress],
          ["GET", "/api/v1/persistentvolumes"],
          ["PATCH", `/api/v1/persistentvolumes/pv-1${dry}`, nodeLabel],
          ["GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dw-1"],
          ["DELETE", `/api/v1/nodes/cp-1${dry}`],
          ["PUT", `${LEASES}/keelson${dry}`, leaderLease],
          ["GET", LEASES],
          ["GET", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"],
        ];
        for (const [method, path, body] of both) {
          const full = await cp.request(method, path, body, undefined, cp.keelsonToken);
          assert.ok(full.status < 300, `full role: ${method} ${path} answered ${full.status}`);
          const narrow = await asWorker(method, path, body);
          assert.equal(narrow.status, 403, `worker: ${method} ${path} answered ${narrow.status}`);
        }
        // refused by RBAC (the control plane's identity may not either, or only under its policy)
        const refused: Array<[string, string, unknown?]> = [
          ["DELETE", `/api/v1/namespaces/default/pods/p-1${dry}`],
          ["GET", "/api/v1/nodes/w-1"],
          ["DELETE", `/api/v1/namespaces/default/services/web${dry}`],
          ["GET", "/api/v1/namespaces/kube-system/secrets"],
          ["PUT", `${LEASES}/keelson-host-cp-1${dry}`, otherHeartbeat],
          ["DELETE", `${LEASES}/keelson-host-cp-1${dry}`],
          ["GET", `${LEASES}/keelson-host-cp-1`],
          ["POST", `/apis/coordination.k8s.io/v1/namespaces/default/leases${dry}`, lease("x")],
        ];
        for (const [method, path, body] of refused) {
          const response = await asWorker(method, path, body);
          assert.equal(
            response.status,
            403,
            `worker: ${method} ${path} answered ${response.status}`,
          );
        }
        // create cannot be narrowed by name in RBAC: the policy refuses any Lease but its own
        await waitFor(
          async () =>
            (await asWorker("POST", `${LEASES}${dry}`, lease("keelson-host-w-9"))).status === 403,
          { timeoutMs: 30_000, message: "the worker lease policy to be enforced" },
        );
        for (const name of ["keelson-status", "keelson-host-w-2", "kube-scheduler", "keelson"]) {
          const response = await asWorker("POST", `${LEASES}${dry}`, lease(name));
          assert.equal(response.status, 403, `worker creates ${name}: ${response.status}`);
          assert.match(
            JSON.stringify(response.body),
            /may write only its own heartbeat Lease kube-system\/keelson-host-w-1/,
          );
        }
        // its own heartbeat, by name: read, and delete (which only the owner reference needs)
        assert.equal((await asWorker("GET", `${LEASES}/keelson-host-w-1`)).status, 200);
        const deleteOwn = await asWorker("DELETE", `${LEASES}/keelson-host-w-1${dry}`);
        assert.equal(deleteOwn.status, 200, JSON.stringify(deleteOwn.body));
        // and created (deleted by the admin first: a create needs it absent)
        await cp.requestOk("DELETE", `${LEASES}/keelson-host-w-1`);
        const own = await asWorker("POST", `${LEASES}${dry}`, lease("keelson-host-w-1"));
        assert.equal(own.status, 201, JSON.stringify(own.body));
      },
    );

    await t.step(
      "a client certificate for user keelson:worker:<worker> gets the same access",
      async () => {
        await registerNode(cp, "w-2", { initialized: true });
        await apply(cp, "rbac-host-worker.yaml", "w-2");
        await signedCert(cp.dir, "w-2", "/CN=keelson:worker:w-2", "extendedKeyUsage=clientAuth\n");
        const client = Deno.createHttpClient({
          caCerts: [cp.caPem],
          cert: await Deno.readTextFile(`${cp.dir}/w-2.crt`),
          key: await Deno.readTextFile(`${cp.dir}/w-2.key`),
        });
        try {
          const send = (method: string, path: string, body?: unknown) =>
            fetch(new URL(path, cp.server), {
              method,
              headers: { "content-type": "application/json" },
              ...(body === undefined ? {} : { body: JSON.stringify(body) }),
              client,
            }).then(async (r) => ({ status: r.status, body: await r.text() }));
          assert.equal((await send("GET", "/api/v1/nodes")).status, 200);
          assert.equal((await send("GET", "/api/v1/persistentvolumes")).status, 403);
          const own = await send("POST", LEASES, lease("keelson-host-w-2"));
          assert.equal(own.status, 201, own.body);
          const other = await send("POST", LEASES, lease("keelson-host-w-3"));
          assert.equal(other.status, 403, other.body);
          const renewed = await cp.requestOk<V1Lease>("GET", `${LEASES}/keelson-host-w-2`);
          renewed.spec = { ...renewed.spec, holderIdentity: "w-2-renewed" };
          assert.equal((await send("PUT", `${LEASES}/keelson-host-w-2`, renewed)).status, 200);
        } finally {
          client.close();
        }
      },
    );
  },
);
