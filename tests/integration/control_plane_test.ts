import assert from "node:assert/strict";
import { parse } from "yaml";
import {
  type ControlPlane,
  integrationTest,
  KEELSON_SERVICE_ACCOUNT_USER,
  startControlPlane,
} from "./_harness/control_plane.ts";
import { registerNode, setNodeReady, UNINITIALIZED_TAINT, waitFor } from "./_harness/kubelet.ts";
import { ADMIN_CERT_USER } from "./_harness/pki.ts";

interface KubeconfigFile {
  clusters: Array<{ cluster: { server: string; "certificate-authority-data": string } }>;
  users: Array<{ user: Record<string, string> }>;
}

interface UserInfo {
  username: string;
  groups?: string[];
}

function decode(base64: string): string {
  return new TextDecoder().decode(Uint8Array.from(atob(base64), (c) => c.charCodeAt(0)));
}

/** Who a kubeconfig authenticates as, asked with plain Deno fetch (no production code). */
async function whoAmI(path: string): Promise<UserInfo> {
  const config = parse(await Deno.readTextFile(path)) as KubeconfigFile;
  const cluster = config.clusters[0]!.cluster;
  const user = config.users[0]!.user;
  const caCerts = [decode(cluster["certificate-authority-data"])];
  const headers: Record<string, string> = { "content-type": "application/json" };
  let client: Deno.HttpClient;
  if (user["client-certificate-data"] && user["client-key-data"]) {
    client = Deno.createHttpClient({
      caCerts,
      http2: false,
      cert: decode(user["client-certificate-data"]),
      key: decode(user["client-key-data"]),
    });
  } else {
    client = Deno.createHttpClient({ caCerts, http2: false });
    // kubectl/client-go trim the token file's whitespace; so must any reader of tokenFile.
    const token = user.token ?? (await Deno.readTextFile(user.tokenFile!)).trim();
    headers.authorization = `Bearer ${token}`;
  }
  try {
    const response = await fetch(
      `${cluster.server}/apis/authentication.k8s.io/v1/selfsubjectreviews`,
      {
        method: "POST",
        headers,
        client,
        body: JSON.stringify({
          apiVersion: "authentication.k8s.io/v1",
          kind: "SelfSubjectReview",
        }),
      },
    );
    const body = await response.json();
    assert.equal(response.status, 201, `whoami via ${path}: ${JSON.stringify(body)}`);
    return body.status.userInfo as UserInfo;
  } finally {
    client.close();
  }
}

async function checkIdentities(cp: ControlPlane): Promise<void> {
  for (
    const path of [cp.tokenKubeconfigPath, cp.tokenFileKubeconfigPath, cp.certKubeconfigPath]
  ) {
    const info = await whoAmI(path);
    assert.equal(info.username, ADMIN_CERT_USER, path);
    assert.ok(info.groups?.includes("system:masters"), `${path}: ${info.groups}`);
  }
  const keelson = await whoAmI(cp.keelsonKubeconfigPath);
  assert.equal(keelson.username, KEELSON_SERVICE_ACCOUNT_USER);
  assert.ok(!keelson.groups?.includes("system:masters"));
}

integrationTest(
  "startControlPlane() serves four identities, restarts, and enforces RBAC",
  async (t) => {
    await using cp = await startControlPlane();
    // deno-lint-ignore no-console
    console.error(
      `control plane started in ${cp.timings.totalMs.toFixed(0)} ms ` +
        `(pki ${cp.timings.pkiMs.toFixed(0)}, etcd ${cp.timings.etcdMs.toFixed(0)}, ` +
        `apiserver ${cp.timings.apiserverMs.toFixed(0)})`,
    );

    await t.step("every kubeconfig authenticates as its identity", () => checkIdentities(cp));

    await t.step("the keelson token may not list nodes before RBAC is applied", async () => {
      const asKeelson = await cp.request(
        "GET",
        "/api/v1/nodes",
        undefined,
        undefined,
        cp.keelsonToken,
      );
      assert.equal(asKeelson.status, 403);
      const asViewer = await cp.request(
        "GET",
        "/api/v1/nodes",
        undefined,
        undefined,
        cp.viewerToken,
      );
      assert.equal(asViewer.status, 403);
      const wrong = await cp.request("GET", "/api/v1/nodes", undefined, undefined, "not-a-token");
      assert.equal(wrong.status, 401);
    });

    await t.step(
      "registerNode() and setNodeReady() act like an external-provider kubelet",
      async () => {
        const node = await registerNode(cp, "smoke-1", { providedNodeIp: "10.0.0.11" });
        assert.ok(node.spec?.taints?.some((taint) => taint.key === UNINITIALIZED_TAINT));
        assert.equal(
          node.metadata?.annotations?.["alpha.kubernetes.io/provided-node-ip"],
          "10.0.0.11",
        );
        const patched = await setNodeReady(cp, "smoke-1", "Unknown");
        const ready = patched.status?.conditions?.find((c) => c.type === "Ready");
        assert.equal(ready?.status, "Unknown");
        assert.ok(patched.status?.capacity?.cpu, "the patch kept the rest of the status");
      },
    );

    await t.step("stopApiserver() and startApiserver() keep the port and the data", async () => {
      const began = performance.now();
      await cp.stopApiserver();
      assert.equal(cp.apiserverRunning, false);
      const down = await cp.request("GET", "/readyz").catch((error) => error);
      assert.ok(down instanceof Error, "the apiserver no longer answers");
      await cp.startApiserver();
      // deno-lint-ignore no-console
      console.error(`apiserver restart took ${(performance.now() - began).toFixed(0)} ms`);
      const node = await waitFor(async () => {
        const response = await cp.request("GET", "/api/v1/nodes/smoke-1");
        return response.status === 200 && response.body;
      }, { timeoutMs: 30_000, message: "node smoke-1 after the restart" });
      assert.ok(node);
      await checkIdentities(cp);
    });
  },
);
