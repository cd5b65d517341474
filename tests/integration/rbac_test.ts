/**
 * deploy/rbac.yaml against a real kube-apiserver in RBAC mode: applied as the admin, it is all
 * `keelson run` needs (leader Lease, Node initialization, LoadBalancer allocation, Events, PV
 * labels), run as the `kube-system:keelson` identity only and with exactly the permissions the
 * compiled binary gets; and that identity is refused what Keelson never does.
 */
import assert from "node:assert/strict";
import type {
  CoreV1Event,
  V1Lease,
  V1Node,
  V1PersistentVolume,
  V1Service,
} from "@kubernetes/client-node";
import { type ControlPlane, integrationTest, startControlPlane } from "./_harness/control_plane.ts";
import { type KeelsonProcess, startKeelson } from "./_harness/keelson_process.ts";
import { registerNode, UNINITIALIZED_TAINT, waitFor } from "./_harness/kubelet.ts";
import { applyRbac, clientCertificate, nodeBoundToken } from "./_harness/credentials.ts";
import { writeKubeconfig } from "./_harness/kubeconfig.ts";
import { decodeHostReport } from "../../src/status/host_report.ts";

const INVENTORY = `
[cluster]
name = "rbac"

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
`;

const CLEANUP_FINALIZER = "service.kubernetes.io/load-balancer-cleanup";
const POOL_ANNOTATION = "keelson.io/allocated-from-pool";

/** GET as the admin; undefined on 404. */
async function get<T>(cp: ControlPlane, path: string): Promise<T | undefined> {
  const response = await cp.request<T>("GET", path);
  if (response.status === 404) return undefined;
  assert.equal(response.status, 200, `GET ${path}: ${JSON.stringify(response.body)}`);
  return response.body;
}

/** `waitFor` whose timeout error ends with the agent's log tail. */
async function waitWithLog<T>(
  agent: KeelsonProcess,
  what: string,
  predicate: () => Promise<T | undefined>,
  timeoutMs = 30_000,
): Promise<T> {
  try {
    return await waitFor(predicate, { timeoutMs, message: what });
  } catch (error) {
    throw new Error(`${String(error)}\nkeelson log tail:\n${(await agent.log()).slice(-4000)}`);
  }
}

integrationTest(
  "deploy/rbac.yaml: keelson run with only that identity initializes Nodes, allocates Services, leads, records Events and labels PVs; other actions are refused",
  async (t) => {
    await using cp = await startControlPlane();
    const asKeelson = (method: string, path: string, body?: unknown) =>
      cp.request(method, path, body, undefined, cp.keelsonToken);

    await t.step("before RBAC is applied the keelson identity can do nothing", async () => {
      assert.equal((await asKeelson("GET", "/api/v1/nodes")).status, 403);
    });

    await t.step("every object of rbac.yaml is created", async () => {
      assert.deepEqual(await applyRbac(cp), [
        "ServiceAccount kube-system/keelson",
        "ClusterRole system:keelson",
        "ClusterRoleBinding system:keelson",
        "Role kube-system/keelson-leader-election",
        "RoleBinding kube-system/keelson-leader-election",
        "Role kube-node-lease/keelson-kubelet-leases",
        "RoleBinding kube-node-lease/keelson-kubelet-leases",
        "ValidatingAdmissionPolicy keelson-lease-writes",
        "ValidatingAdmissionPolicyBinding keelson-lease-writes",
        "ValidatingAdmissionPolicy keelson-pod-deletions",
        "ValidatingAdmissionPolicyBinding keelson-pod-deletions",
      ]);
    });

    // Objects exist before Keelson starts, as on a cluster that is being set up.
    await registerNode(cp, "n-1", { providedNodeIp: "10.0.0.21" });
    await cp.requestOk("POST", "/api/v1/persistentvolumes", {
      metadata: { name: "local-n1" },
      spec: {
        capacity: { storage: "1Gi" },
        accessModes: ["ReadWriteOnce"],
        storageClassName: "local",
        local: { path: "/mnt/disk1" },
        nodeAffinity: {
          required: {
            nodeSelectorTerms: [{
              matchExpressions: [{
                key: "kubernetes.io/hostname",
                operator: "In",
                values: ["n-1"],
              }],
            }],
          },
        },
      },
    });
    await cp.requestOk("POST", "/api/v1/namespaces/default/services", {
      metadata: { name: "web" },
      spec: { type: "LoadBalancer", selector: { app: "web" }, ports: [{ port: 80 }] },
    });

    const dir = await Deno.makeTempDir({ prefix: "keelson-rbac-" });
    const configPath = `${dir}/keelson.toml`;
    await Deno.writeTextFile(configPath, INVENTORY);
    // the host's own credential: a keelson token bound to its Node (README, "Kubernetes access")
    const n1Token = await nodeBoundToken(cp, "n-1");
    const n1Kubeconfig = `${dir}/n-1.kubeconfig`;
    await writeKubeconfig(n1Kubeconfig, cp.server, cp.caPem, "keelson", { token: n1Token });
    await using agent = await startKeelson({
      configPath,
      kubeconfig: n1Kubeconfig,
      host: "n-1",
      dir,
    });

    try {
      await t.step("it becomes leader: the Lease is created and held", async () => {
        const lease = await waitWithLog(agent, "the keelson Lease", async () => {
          const l = await get<V1Lease>(
            cp,
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/keelson",
          );
          return l?.spec?.holderIdentity ? l : undefined;
        }, 60_000);
        // client-go's identity: the hostname, "_", a UUID per process
        assert.match(lease.spec!.holderIdentity!, /^.+_[0-9a-f-]{36}$/);
        assert.equal(await agent.metric('leader_election_master_status{name="keelson"}'), 1);
      });

      await t.step(
        "the Node is initialized (providerID set, uninitialized taint removed)",
        async () => {
          const node = await waitWithLog(agent, "an initialized Node n-1", async () => {
            const n = await get<V1Node>(cp, "/api/v1/nodes/n-1");
            return n?.spec?.providerID ? n : undefined;
          });
          assert.equal(node.spec!.providerID, "baremetal://SN-N1");
          assert.ok(!(node.spec!.taints ?? []).some((taint) => taint.key === UNINITIALIZED_TAINT));
          assert.equal(node.metadata!.labels!["topology.kubernetes.io/zone"], "z1");
        },
      );

      await t.step(
        "the LoadBalancer Service gets an address, the finalizer and its pool",
        async () => {
          const service = await waitWithLog(
            agent,
            "an ingress address on default/web",
            async () => {
              const s = await get<V1Service>(cp, "/api/v1/namespaces/default/services/web");
              return s?.status?.loadBalancer?.ingress?.length ? s : undefined;
            },
          );
          assert.match(service.status!.loadBalancer!.ingress![0]!.ip!, /^192\.0\.2\.\d+$/);
          assert.ok(service.metadata!.finalizers?.includes(CLEANUP_FINALIZER));
          assert.equal(service.metadata!.annotations?.[POOL_ANNOTATION], "lan");
        },
      );

      await t.step("Events are recorded for the Service", async () => {
        const events = await waitWithLog(agent, "an Event about default/web", async () => {
          const list = await get<{ items: CoreV1Event[] }>(
            cp,
            "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dweb",
          );
          // EnsuringLoadBalancer comes first; the step is about the one that says it is done
          return list?.items.some((e) => e.reason === "EnsuredLoadBalancer")
            ? list.items
            : undefined;
        });
        assert.ok(events.some((e) => e.reason === "EnsuredLoadBalancer"), JSON.stringify(events));
      });

      await t.step("the local PV gets the zone and region of its Node", async () => {
        const volume = await waitWithLog(agent, "zone label on PV local-n1", async () => {
          const v = await get<V1PersistentVolume>(cp, "/api/v1/persistentvolumes/local-n1");
          return v?.metadata?.labels?.["topology.kubernetes.io/zone"] ? v : undefined;
        });
        assert.equal(volume.metadata!.labels!["topology.kubernetes.io/region"], "r1");
      });

      await t.step(
        "the host publishes its heartbeat Lease keelson-host-n-1, owned by its Node",
        async () => {
          // the first write may come before the Node cache synced; the next renew names the owner
          const lease = await waitWithLog(
            agent,
            "the heartbeat Lease owned by Node n-1",
            async () => {
              const l = await get<V1Lease>(
                cp,
                "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/keelson-host-n-1",
              );
              return l?.metadata?.ownerReferences?.length ? l : undefined;
            },
          );
          const node = await get<V1Node>(cp, "/api/v1/nodes/n-1");
          assert.deepEqual(lease.metadata!.ownerReferences, [
            { apiVersion: "v1", kind: "Node", name: "n-1", uid: node!.metadata!.uid },
          ]);
          assert.equal(lease.spec!.holderIdentity, "n-1");
          const report = decodeHostReport(lease.metadata!.annotations!["keelson.io/data-plane"]!);
          assert.ok(!("error" in report) && report.host === "n-1", JSON.stringify(report));
        },
      );

      await t.step("no request of the agent was refused", async () => {
        const log = await agent.log();
        assert.doesNotMatch(log, /forbidden|\b403\b/i, log.slice(-4000));
        assert.doesNotMatch(log, /NotCapable|Requires \w+ access/, log.slice(-4000));
      });
    } finally {
      await agent.stop();
      await Deno.remove(dir, { recursive: true });
    }

    await t.step(
      "each host writes only its own heartbeat Lease (and the leader Lease)",
      async () => {
        await registerNode(cp, "n-2");
        const n2Token = await nodeBoundToken(cp, "n-2");
        const leasePath = (name = "") =>
          `/apis/coordination.k8s.io/v1/namespaces/kube-system/leases${name ? `/${name}` : ""}`;
        const lease = (name: string) => ({
          apiVersion: "coordination.k8s.io/v1",
          kind: "Lease",
          metadata: { name, namespace: "kube-system" },
          spec: { holderIdentity: name },
        });
        const as = (token: string) => (method: string, path: string, body?: unknown) =>
          cp.request(method, path, body, undefined, token);
        const n1 = as(n1Token);
        const n2 = as(n2Token);
        await cp.requestOk("POST", leasePath(), lease("kube-scheduler"));
        // a new policy takes effect once the apiserver has loaded it: wait for a dry-run denial
        await waitFor(
          async () =>
            (await asKeelson("POST", `${leasePath()}?dryRun=All`, lease("keelson-host-probe")))
              .status === 403,
          { timeoutMs: 30_000, message: "the lease policy to be enforced" },
        );
        // a real change (a no-op update writes nothing, whoever sends it)
        const current = async (name: string) => {
          const l = (await get<V1Lease>(cp, leasePath(name)))!;
          return { ...l, spec: { ...l.spec, holderIdentity: `changed-${crypto.randomUUID()}` } };
        };

        // its own: renewed (the agent created it above) and created
        assert.equal(
          (await n1("PUT", leasePath("keelson-host-n-1"), await current("keelson-host-n-1")))
            .status,
          200,
        );
        assert.equal((await n2("POST", leasePath(), lease("keelson-host-n-2"))).status, 201);
        // another host's, a Lease of another component, a heartbeat of a host not yet written
        const denied: Array<[string, Awaited<ReturnType<typeof n1>>]> = [
          [
            "n-1 updates n-2's",
            await n1("PUT", leasePath("keelson-host-n-2"), await current("keelson-host-n-2")),
          ],
          [
            "n-2 updates n-1's",
            await n2("PUT", leasePath("keelson-host-n-1"), await current("keelson-host-n-1")),
          ],
          ["n-1 creates n-3's", await n1("POST", leasePath(), lease("keelson-host-n-3"))],
          [
            "n-1 updates kube-scheduler's",
            await n1("PUT", leasePath("kube-scheduler"), await current("kube-scheduler")),
          ],
          [
            "a token bound to no Node creates a heartbeat",
            await asKeelson("POST", leasePath(), lease("keelson-host-n-9")),
          ],
        ];
        for (const [what, response] of denied) {
          assert.equal(response.status, 403, `${what}: ${JSON.stringify(response.body)}`);
          assert.match(
            JSON.stringify(response.body),
            /keelson may write only the Leases keelson, keelson-status and/,
          );
        }
        // any keelson credential may hold the leader Lease
        assert.equal((await n2("PUT", leasePath("keelson"), await current("keelson"))).status, 200);

        // a client certificate for user keelson:host:n-3 in group keelson:hosts
        const cert = await clientCertificate(cp, "keelson:host:n-3", "keelson:hosts");
        const client = Deno.createHttpClient({ caCerts: [cp.caPem], ...cert });
        try {
          const post = (name: string) =>
            fetch(new URL(leasePath(), cp.server), {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify(lease(name)),
              client,
            }).then(async (r) => ({ status: r.status, body: await r.text() }));
          assert.equal((await post("keelson-host-n-3")).status, 201);
          const other = await post("keelson-host-n-4");
          assert.equal(other.status, 403, other.body);
        } finally {
          client.close();
        }
      },
    );

    await t.step("the kubelets' node Leases: listed and watched, never written", async () => {
      const leases = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases";
      const kubeletLease = {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name: "n-1", namespace: "kube-node-lease" },
        spec: { holderIdentity: "n-1", leaseDurationSeconds: 40 },
      };
      await cp.requestOk("POST", leases, kubeletLease);
      assert.equal((await asKeelson("GET", leases)).status, 200);
      const watch = await asKeelson("GET", `${leases}?watch=1&timeoutSeconds=1`);
      assert.equal(watch.status, 200, `watch answered ${watch.status}`);
      for (
        const [method, path, body] of [
          ["GET", `${leases}/n-1`],
          ["PUT", `${leases}/n-1`, kubeletLease],
          ["POST", leases, { ...kubeletLease, metadata: { name: "n-9" } }],
          ["DELETE", `${leases}/n-1`],
        ] as const
      ) {
        const response = await asKeelson(method, path, body);
        assert.equal(response.status, 403, `${method} ${path} answered ${response.status}`);
      }
    });

    await t.step(
      "Pods: listed, and deleted only once terminating; never read one by one, watched or changed",
      async () => {
        const pods = "/api/v1/namespaces/default/pods";
        const pod = {
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "p-1" },
          spec: { nodeName: "n-1", containers: [{ name: "app", image: "registry.invalid/app:1" }] },
        };
        await cp.requestOk("POST", pods, pod);
        const listed = await asKeelson("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn-1");
        assert.equal(listed.status, 200, `list answered ${listed.status}`);
        for (
          const [method, path, body] of [
            ["GET", `${pods}/p-1`],
            ["GET", `${pods}?watch=1&timeoutSeconds=1`],
            ["POST", pods, { ...pod, metadata: { name: "p-2" } }],
            ["PUT", `${pods}/p-1`, pod],
            ["PATCH", `${pods}/p-1`, { metadata: { labels: { a: "b" } } }],
            ["PATCH", `${pods}/p-1/status`, { status: { phase: "Failed" } }],
            ["POST", `${pods}/p-1/eviction`, {
              apiVersion: "policy/v1",
              kind: "Eviction",
              metadata: { name: "p-1", namespace: "default" },
            }],
          ] as const
        ) {
          const response = await asKeelson(method, path, body);
          assert.equal(response.status, 403, `${method} ${path} answered ${response.status}`);
        }
        const force = { apiVersion: "v1", kind: "DeleteOptions", gracePeriodSeconds: 0 };
        // a Pod not terminating: the policy refuses
        const running = await asKeelson("DELETE", `${pods}/p-1`, force);
        assert.equal(running.status, 403, `delete of a running Pod answered ${running.status}`);
        assert.match(JSON.stringify(running.body), /only a Pod that is already terminating/);
        // marked terminating (its Node's kubelet would end it; none runs here): then allowed
        await cp.requestOk("DELETE", `${pods}/p-1`, { ...force, gracePeriodSeconds: 30 });
        const deleted = await asKeelson("DELETE", `${pods}/p-1`, force);
        assert.equal(deleted.status, 200, `delete answered ${deleted.status}`);
        assert.equal((await cp.request("GET", `${pods}/p-1`)).status, 404);
      },
    );

    await t.step("actions outside the role are refused with 403", async () => {
      const refused: Array<[string, string, unknown?]> = [
        ["DELETE", "/api/v1/namespaces/default/services/web"],
        ["PATCH", "/api/v1/namespaces/default/services/web", { spec: { type: "ClusterIP" } }],
        ["GET", "/api/v1/namespaces/kube-system/secrets"],
        ["GET", "/api/v1/namespaces/default/secrets/anything"],
        ["POST", "/api/v1/namespaces/default/services", {
          metadata: { name: "x" },
          spec: { ports: [{ port: 1 }] },
        }],
        ["GET", "/api/v1/namespaces/default/pods/anything"],
        ["DELETE", "/api/v1/persistentvolumes/local-n1"],
        ["DELETE", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler"],
        ["GET", "/apis/coordination.k8s.io/v1/namespaces/default/leases"],
        ["POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", {
          metadata: { name: "escalate" },
          rules: [],
        }],
      ];
      for (const [method, path, body] of refused) {
        const response = await asKeelson(method, path, body);
        assert.equal(response.status, 403, `${method} ${path} answered ${response.status}`);
      }
      // and the Service is still there
      assert.ok(await get<V1Service>(cp, "/api/v1/namespaces/default/services/web"));
    });
  },
);
