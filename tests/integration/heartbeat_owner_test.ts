/**
 * The heartbeat Lease's owner reference against a real kube-apiserver with deploy/rbac.yaml, the
 * ValidatingAdmissionPolicy and OwnerReferencesPermissionEnforcement on: a host whose Node exists
 * names it as owner (as kubelet's node Leases), a host without a Node (a control-plane host
 * without kubelet) names none, a Node that appears later is named on the next renew, and a Node
 * recreated with a new uid is followed — each written with the host's own credential; and the
 * `delete` that OwnerReferencesPermissionEnforcement requires reaches the host's own Lease only;
 * with an older rbac.yaml (no `delete`) the owner change is refused and the heartbeat still renews.
 *
 * No kube-controller-manager runs here: these tests pin the reference the garbage collector acts
 * on; heartbeat_gc_test.ts runs a real one and sees the Lease deleted with its Node.
 */
import assert from "node:assert/strict";
import type { V1Lease, V1Node } from "@kubernetes/client-node";
import { type ControlPlane, integrationTest, startControlPlane } from "./_harness/control_plane.ts";
import { applyRbac, clientCertificate, nodeBoundToken } from "./_harness/credentials.ts";
import { writeKubeconfig } from "./_harness/kubeconfig.ts";
import { registerNode, waitFor } from "./_harness/kubelet.ts";
import { hostNode } from "../../src/agent/heartbeat.ts";
import { HostHeartbeat } from "../../src/agent/host_heartbeat.ts";
import { createInformer } from "../../src/kube/informer.ts";
import { createKubeClient, type KubeClient } from "../../src/kube/kube_client.ts";
import { resolveConnectionSettings } from "../../src/kube/kubeconfig.ts";
import { createLeaseApi } from "../../src/kube/lease_api.ts";
import { createMetricsRegistry } from "../../src/metrics/registry.ts";
import { report } from "../unit/status/_leases.ts";

const LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases";

/** One host as `keelson run` wires it: its own credential, a Node cache, its heartbeat. */
async function startHost(
  cp: ControlPlane,
  dir: string,
  host: string,
  user: Parameters<typeof writeKubeconfig>[4],
): Promise<
  { heartbeat: HostHeartbeat; nodeUid: () => string | undefined } & AsyncDisposable
> {
  const kubeconfig = `${dir}/${host}.kubeconfig`;
  await writeKubeconfig(kubeconfig, cp.server, cp.caPem, "keelson", user);
  const registry = createMetricsRegistry();
  const client: KubeClient = createKubeClient(await resolveConnectionSettings({ kubeconfig }), {
    registry,
    userAgent: "keelson-test",
  });
  const nodes = createInformer<V1Node>(client, { path: "/api/v1/nodes", kind: "Node", registry });
  const stop = new AbortController();
  const running = nodes.run(stop.signal);
  assert.ok(await nodes.waitForSync(AbortSignal.timeout(30_000)), "the Node cache synced");
  const heartbeat = new HostHeartbeat({
    leases: createLeaseApi(client.rest),
    host,
    report: () => Promise.resolve(report(host, [])),
    node: () => hostNode(nodes, host),
  });
  return {
    heartbeat,
    nodeUid: () => nodes.get(host)?.metadata?.uid,
    async [Symbol.asyncDispose]() {
      stop.abort();
      await running;
      client.close();
    },
  };
}

async function ownerReferences(cp: ControlPlane, host: string) {
  const lease = await cp.requestOk<V1Lease>("GET", `${LEASES}/keelson-host-${host}`);
  return lease.metadata?.ownerReferences;
}

integrationTest(
  "heartbeat Lease: owned by the host's Node when there is one, followed when it appears or is recreated, none without a Node",
  async (t) => {
    await using cp = await startControlPlane({
      apiserverArgs: ["--enable-admission-plugins=OwnerReferencesPermissionEnforcement"],
    });
    await applyRbac(cp);
    const dir = await Deno.makeTempDir({ prefix: "keelson-hb-owner-" });
    try {
      const n1 = await registerNode(cp, "n-1");
      // a new policy takes effect once the apiserver has loaded it: wait for a dry-run denial
      await waitFor(
        async () =>
          (await cp.request(
            "POST",
            `${LEASES}?dryRun=All`,
            { metadata: { name: "keelson-host-probe" }, spec: {} },
            undefined,
            cp.keelsonToken,
          )).status === 403,
        { timeoutMs: 30_000, message: "the lease policy to be enforced" },
      );

      await t.step("a host with a Node: created with the Node as owner", async () => {
        await using host = await startHost(cp, dir, "n-1", {
          token: await nodeBoundToken(cp, "n-1"),
        });
        await host.heartbeat.writeOnce();
        assert.deepEqual(await ownerReferences(cp, "n-1"), [
          { apiVersion: "v1", kind: "Node", name: "n-1", uid: n1.metadata!.uid },
        ]);
        // renewed with the reference unchanged
        await host.heartbeat.writeOnce();
        assert.equal((await ownerReferences(cp, "n-1"))?.length, 1);
      });

      await t.step(
        "a control-plane host without a Node: no owner; its Node appears: named on the next renew; recreated: the new uid",
        async () => {
          const cert = await clientCertificate(cp, "keelson:host:cp-9", "keelson:hosts");
          await using host = await startHost(cp, dir, "cp-9", {
            clientCertificatePem: cert.cert,
            clientKeyPem: cert.key,
          });
          await host.heartbeat.writeOnce();
          assert.equal(await ownerReferences(cp, "cp-9"), undefined);

          const first = await registerNode(cp, "cp-9");
          await waitFor(() => Promise.resolve(host.nodeUid() === first.metadata!.uid), {
            timeoutMs: 30_000,
            message: "the Node cache to hold cp-9",
          });
          // an update that adds an owner reference: OwnerReferencesPermissionEnforcement admits it
          await host.heartbeat.writeOnce();
          assert.deepEqual(await ownerReferences(cp, "cp-9"), [
            { apiVersion: "v1", kind: "Node", name: "cp-9", uid: first.metadata!.uid },
          ]);

          await cp.requestOk("DELETE", "/api/v1/nodes/cp-9");
          const second = await registerNode(cp, "cp-9");
          assert.notEqual(second.metadata!.uid, first.metadata!.uid);
          await waitFor(() => Promise.resolve(host.nodeUid() === second.metadata!.uid), {
            timeoutMs: 30_000,
            message: "the Node cache to hold the recreated cp-9",
          });
          await host.heartbeat.writeOnce();
          assert.deepEqual(await ownerReferences(cp, "cp-9"), [
            { apiVersion: "v1", kind: "Node", name: "cp-9", uid: second.metadata!.uid },
          ]);
        },
      );

      await t.step("the policy still refuses another host's Lease, owner or not", async () => {
        const response = await cp.request(
          "POST",
          LEASES,
          {
            metadata: {
              name: "keelson-host-n-2",
              ownerReferences: [{
                apiVersion: "v1",
                kind: "Node",
                name: "n-1",
                uid: n1.metadata!.uid,
              }],
            },
            spec: { holderIdentity: "n-2" },
          },
          undefined,
          await nodeBoundToken(cp, "n-1"),
        );
        assert.equal(response.status, 403, JSON.stringify(response.body));
      });

      await t.step(
        "delete (granted for the owner-reference check): a host's own heartbeat only",
        async () => {
          const n1Token = await nodeBoundToken(cp, "n-1");
          const refused: Array<[string, string | undefined, string]> = [
            ["n-1 deletes cp-9's heartbeat", n1Token, "keelson-host-cp-9"],
            ["n-1 deletes the leader Lease", n1Token, "keelson"],
            [
              "a token bound to no Node deletes n-1's heartbeat",
              cp.keelsonToken,
              "keelson-host-n-1",
            ],
          ];
          await cp.requestOk("POST", LEASES, { metadata: { name: "keelson" }, spec: {} });
          for (const [what, token, name] of refused) {
            const response = await cp.request(
              "DELETE",
              `${LEASES}/${name}`,
              undefined,
              undefined,
              token,
            );
            assert.equal(response.status, 403, `${what}: ${JSON.stringify(response.body)}`);
            assert.match(JSON.stringify(response.body), /keelson may delete only the Lease/);
          }
          const own = await cp.request(
            "DELETE",
            `${LEASES}/keelson-host-n-1`,
            undefined,
            undefined,
            n1Token,
          );
          assert.equal(own.status, 200, JSON.stringify(own.body));
        },
      );

      await t.step(
        "with an older rbac.yaml (no delete on Leases) the owner change is refused but the heartbeat is still renewed",
        async () => {
          const role = "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/roles/" +
            "keelson-leader-election";
          await cp.requestOk("PATCH", role, [{
            op: "replace",
            path: "/rules/0/verbs",
            value: ["get", "list", "watch", "create", "update"],
          }], "application/json-patch+json");
          const cert = await clientCertificate(cp, "keelson:host:cp-8", "keelson:hosts");
          await using host = await startHost(cp, dir, "cp-8", {
            clientCertificatePem: cert.cert,
            clientKeyPem: cert.key,
          });
          await host.heartbeat.writeOnce();
          const node = await registerNode(cp, "cp-8");
          await waitFor(() => Promise.resolve(host.nodeUid() === node.metadata!.uid), {
            timeoutMs: 30_000,
            message: "the Node cache to hold cp-8",
          });
          // RBAC changes reach the authorizer through its informer: wait until it says no
          await waitFor(async () => {
            const review = await cp.requestOk<{ status: { allowed: boolean } }>(
              "POST",
              "/apis/authorization.k8s.io/v1/subjectaccessreviews",
              {
                spec: {
                  user: "keelson:host:cp-8",
                  groups: ["keelson:hosts"],
                  resourceAttributes: {
                    namespace: "kube-system",
                    verb: "delete",
                    group: "coordination.k8s.io",
                    resource: "leases",
                    name: "keelson-host-cp-8",
                  },
                },
              },
            );
            return !review.status.allowed;
          }, { timeoutMs: 30_000, message: "delete on Leases to be withdrawn" });
          const before = await cp.requestOk<V1Lease>("GET", `${LEASES}/keelson-host-cp-8`);
          await host.heartbeat.writeOnce();
          const after = await cp.requestOk<V1Lease>("GET", `${LEASES}/keelson-host-cp-8`);
          assert.notEqual(after.spec?.renewTime, before.spec?.renewTime, "renewed");
          assert.equal(after.metadata?.ownerReferences, undefined);

          // a create may name the owner all the same (the plugin checks changes of existing objects)
          const cp7 = await registerNode(cp, "cp-7");
          const cert7 = await clientCertificate(cp, "keelson:host:cp-7", "keelson:hosts");
          await using host7 = await startHost(cp, dir, "cp-7", {
            clientCertificatePem: cert7.cert,
            clientKeyPem: cert7.key,
          });
          await host7.heartbeat.writeOnce();
          assert.deepEqual(await ownerReferences(cp, "cp-7"), [
            { apiVersion: "v1", kind: "Node", name: "cp-7", uid: cp7.metadata!.uid },
          ]);
        },
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);
