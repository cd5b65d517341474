/**
 * The Kubernetes client (Deno fetch transport, informer, cluster writer) against a real
 * kube-apiserver + etcd, with each kubeconfig identity the harness writes.
 *
 * Figures (latencies) are printed with a `FIGURE` prefix; the test asserts behaviour, and the
 * generous deadlines only stop a hung test.
 */
import assert from "node:assert/strict";
import type { V1Node } from "@kubernetes/client-node";
import { createMetricsRegistry } from "../../src/metrics/registry.ts";
import { createClusterWriter } from "../../src/kube/cluster_writer.ts";
import { createInformer, type RunnableInformer } from "../../src/kube/informer.ts";
import { createKubeClient, type KubeClient } from "../../src/kube/kube_client.ts";
import { resolveConnectionSettings } from "../../src/kube/kubeconfig.ts";
import type { InformerEvent, KubeApiError } from "../../src/kube/ports.ts";
import { parse as parseYaml, stringify as stringifyYaml } from "yaml";
import { type ControlPlane, integrationTest, startControlPlane } from "./_harness/control_plane.ts";
import { pollUntil } from "../_support/poll.ts";

interface Running {
  client: KubeClient;
  informer: RunnableInformer<V1Node>;
  events: Array<InformerEvent<V1Node> & { at: number }>;
  stop(): Promise<void>;
}

async function startClient(kubeconfig: string): Promise<Running> {
  const settings = await resolveConnectionSettings({ kubeconfig });
  const registry = createMetricsRegistry();
  const client = createKubeClient(settings, { registry, userAgent: "keelson-test" });
  const informer = createInformer<V1Node>(client, {
    path: "/api/v1/nodes",
    kind: "Node",
    registry,
  });
  const events: Running["events"] = [];
  informer.subscribe((event) => events.push({ ...event, at: performance.now() }));
  const controller = new AbortController();
  const done = informer.run(controller.signal);
  assert.equal(await informer.waitForSync(AbortSignal.timeout(30_000)), true);
  return {
    client,
    informer,
    events,
    async stop() {
      controller.abort();
      await done;
      client.close();
    },
  };
}

function newNode(name: string): V1Node {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name, labels: { "keelson.test/origin": "create" } },
    status: { capacity: { cpu: "4", memory: "8Gi", pods: "110" } },
  };
}

/** Resolves with the time an informer event matching `match` was seen (polling the log). */
async function seen(
  running: Running,
  match: (event: InformerEvent<V1Node>) => boolean,
  timeoutMs = 60_000,
): Promise<number> {
  const hit = () => running.events.find(match);
  const waited = await pollUntil("an informer event", hit, { timeoutMs, intervalMs: 20 });
  return waited.value.at;
}

const isNode = (type: string, name: string) => (event: InformerEvent<V1Node>) =>
  event.type === type && event.object.metadata?.name === name;

async function crudScenario(cp: ControlPlane, kubeconfig: string, name: string): Promise<void> {
  const running = await startClient(kubeconfig);
  try {
    const writer = createClusterWriter(running.client);
    const list = await running.client.list("/api/v1/nodes");
    assert.match(list.resourceVersion, /^\d+$/);

    const created = await running.client.rest.create<V1Node>(
      "/api/v1/nodes",
      newNode(name),
      `create node "${name}"`,
    );
    assert.equal(typeof created.metadata?.creationTimestamp, "string", "plain JSON, as sent");
    await seen(running, isNode("add", name));

    await writer.patchNode(name, { metadata: { labels: { merge: "yes" } } }, "merge");
    await writer.patchNode(name, { spec: { unschedulable: true } }, "strategic");
    await writer.patchNode(name, [
      { op: "add", path: "/metadata/labels/json", value: "yes" },
    ], "json");
    await writer.patchNodeStatus(name, {
      status: { addresses: [{ type: "InternalIP", address: "10.0.0.9" }] },
    }, "strategic");

    // The informer's copy carries every change: take it from the cache and PUT it back.
    const cached = await waitForCached(
      running,
      name,
      (node) =>
        node.metadata?.labels?.["json"] === "yes" && node.status?.addresses?.length === 1 &&
        node.spec?.unschedulable === true && node.metadata.labels["merge"] === "yes",
    );
    assert.equal(cached.metadata?.managedFields, undefined, "the cache drops managedFields");
    assert.equal(cached.status?.capacity, undefined, "the cache keeps no unread Node status");
    const copy = structuredClone(cached);
    copy.metadata!.labels = { ...copy.metadata!.labels, replaced: "yes" };
    const replaced = await writer.replaceNode(copy);
    assert.equal(replaced.metadata?.labels?.["replaced"], "yes");
    assert.equal(replaced.metadata?.creationTimestamp, created.metadata?.creationTimestamp);
    // a PUT of a Node ignores status, and one without managedFields keeps the server's
    assert.equal(replaced.status?.capacity?.["memory"], "8Gi");
    assert.ok((replaced.metadata?.managedFields ?? []).length > 0);
    assert.deepEqual(structuredClone(replaced.status?.addresses), [{
      type: "InternalIP",
      address: "10.0.0.9",
    }]);
    assert.equal(replaced.spec?.unschedulable, true);
    // What the server stores equals what a direct read returns: nothing was lost on the way.
    const raw = await cp.requestOk<V1Node & Record<string, unknown>>(
      "GET",
      `/api/v1/nodes/${name}`,
    );
    assert.equal(raw.metadata?.labels?.["json"], "yes");
    assert.equal(raw.metadata?.creationTimestamp, created.metadata?.creationTimestamp);

    // Replacing a stale copy is a conflict, mapped to KubeApiError 409.
    await assert.rejects(
      writer.replaceNode(cached),
      (error: Error & { code?: number; reason?: string }) => {
        assert.equal(error.name, "KubeApiError");
        assert.equal(error.code, 409);
        assert.equal(error.reason, "Conflict");
        return true;
      },
    );

    await seen(
      running,
      (e) => e.type === "update" && e.object.metadata?.labels?.["replaced"] === "yes",
    );
    await writer.deleteNode(name);
    await seen(running, isNode("delete", name));
    assert.equal(running.informer.get(name), undefined);
  } finally {
    await running.stop();
  }
}

async function waitForCached(
  running: Running,
  name: string,
  ready: (node: V1Node) => boolean,
): Promise<V1Node> {
  const cached = () => {
    const node = running.informer.get(name);
    return node && ready(node) ? node : undefined;
  };
  const waited = await pollUntil(`node "${name}" in the informer cache`, cached, {
    timeoutMs: 30_000,
    intervalMs: 20,
  });
  return waited.value;
}

integrationTest(
  "createKubeClient() lists, creates, patches (all content types) and replaces Nodes from the informer cache with token, tokenFile and client-certificate kubeconfigs",
  async (t) => {
    await using cp = await startControlPlane();
    const identities: Array<[string, string]> = [
      ["token", cp.tokenKubeconfigPath],
      ["tokenfile", cp.tokenFileKubeconfigPath],
      ["cert", cp.certKubeconfigPath],
    ];
    for (const [identity, path] of identities) {
      await t.step(`with a ${identity} kubeconfig`, () => crudScenario(cp, path, `n-${identity}`));
    }
    await t.step(
      "mapping a rejected token to KubeApiError 401",
      async () => {
        // the cert kubeconfig's key swapped for another one: the TLS handshake or the apiserver
        // must refuse, proving the client certificate is really what authenticates
        const doc = parseYaml(await Deno.readTextFile(cp.tokenKubeconfigPath));
        doc.users[0].user = { token: "not-a-valid-token" };
        const path = `${cp.dir}/bad-token.kubeconfig`;
        await Deno.writeTextFile(path, stringifyYaml(doc));
        const client = createKubeClient(await resolveConnectionSettings({ kubeconfig: path }), {
          registry: createMetricsRegistry(),
        });
        try {
          await assert.rejects(client.list("/api/v1/nodes"), (error: KubeApiError) => {
            assert.equal(error.code, 401);
            return true;
          });
          await assert.rejects(
            client.rest.get("/api/v1/nodes/x", 'read node "x"'),
            (error: KubeApiError) => {
              assert.equal(error.code, 401);
              assert.equal(error.reason, "Unauthorized");
              return true;
            },
          );
        } finally {
          client.close();
        }
      },
    );
  },
);

integrationTest(
  "createInformer() survives an apiserver stopped for 10 s and sees Nodes created after the restart",
  async () => {
    await using cp = await startControlPlane();
    const running = await startClient(cp.tokenKubeconfigPath);
    try {
      await cp.stopApiserver();
      await new Promise((resolve) => setTimeout(resolve, 10_000));
      const restartBegan = performance.now();
      await cp.startApiserver();
      const ready = performance.now();
      const createdAt = performance.now();
      await cp.requestOk("POST", "/api/v1/nodes", newNode("after-restart"));
      const at = await seen(running, isNode("add", "after-restart"));
      // deno-lint-ignore no-console
      console.log(
        `FIGURE restart: apiserver ready ${Math.round(ready - restartBegan)} ms after start; ` +
          `node created after the restart seen ${Math.round(at - createdAt)} ms later`,
      );
      assert.ok(running.informer.get("after-restart"));
    } finally {
      await running.stop();
    }
  },
);

integrationTest(
  "createInformer() delivers the next event within seconds after its watch was idle for 90 s",
  async () => {
    await using cp = await startControlPlane();
    const running = await startClient(cp.tokenKubeconfigPath);
    try {
      await new Promise((resolve) => setTimeout(resolve, 90_000));
      const createdAt = performance.now();
      await cp.requestOk("POST", "/api/v1/nodes", newNode("after-idle"));
      const at = await seen(running, isNode("add", "after-idle"));
      // deno-lint-ignore no-console
      console.log(
        `FIGURE idle: node created after 90 s idle seen ${Math.round(at - createdAt)} ms later`,
      );
      assert.ok(running.informer.get("after-idle"));
    } finally {
      await running.stop();
    }
  },
);
