import assert from "node:assert/strict";
import type { V1Lease } from "@kubernetes/client-node";
import {
  heartbeatOwnerReferences,
  HostHeartbeat,
  type HostNode,
} from "../../../src/agent/host_heartbeat.ts";
import type { LeaseApi } from "../../../src/kube/lease_api.ts";
import { KubeApiError } from "../../../src/kube/ports.ts";
import { decodeHostReport } from "../../../src/status/host_report.ts";
import { report } from "../status/_leases.ts";
import { pollUntil } from "../../_support/poll.ts";

/** Leases in memory with resourceVersion checks, as the API server does. */
class MemoryLeases implements LeaseApi {
  store = new Map<string, V1Lease>();
  writes = 0;
  #rv = 0;
  read(namespace: string, name: string) {
    const lease = this.store.get(`${namespace}/${name}`);
    return Promise.resolve(lease && structuredClone(lease));
  }
  create(lease: V1Lease) {
    const key = `${lease.metadata!.namespace}/${lease.metadata!.name}`;
    if (this.store.has(key)) {
      return Promise.reject(new KubeApiError("exists", { code: 409, reason: "AlreadyExists" }));
    }
    return Promise.resolve(this.#store(key, lease));
  }
  replace(lease: V1Lease) {
    const key = `${lease.metadata!.namespace}/${lease.metadata!.name}`;
    const current = this.store.get(key);
    if (current?.metadata?.resourceVersion !== lease.metadata?.resourceVersion) {
      return Promise.reject(new KubeApiError("conflict", { code: 409, reason: "Conflict" }));
    }
    return Promise.resolve(this.#store(key, lease));
  }
  #store(key: string, lease: V1Lease): V1Lease {
    this.writes++;
    const stored = structuredClone(lease);
    stored.metadata!.resourceVersion = String(++this.#rv);
    this.store.set(key, stored);
    return structuredClone(stored);
  }
}

Deno.test("HostHeartbeat.writeOnce() creates, then renews its own Lease with the report", async () => {
  const leases = new MemoryLeases();
  let now = Date.parse("2026-01-01T00:00:00Z");
  let vips = ["10.0.0.150"];
  const hb = new HostHeartbeat({
    leases,
    host: "cp-1",
    report: () => Promise.resolve(report("cp-1", vips)),
    leaseDurationSeconds: 15,
    now: () => now,
  });
  await hb.writeOnce();
  const created = leases.store.get("kube-system/keelson-host-cp-1")!;
  assert.equal(created.spec?.holderIdentity, "cp-1");
  assert.equal(created.spec?.leaseDurationSeconds, 15);
  assert.equal(created.metadata?.labels?.["keelson.io/heartbeat"], "true");
  assert.equal(new Date(created.spec!.renewTime!).toISOString(), "2026-01-01T00:00:00.000Z");

  now += 5000;
  vips = [];
  await hb.writeOnce();
  const renewed = leases.store.get("kube-system/keelson-host-cp-1")!;
  assert.equal(new Date(renewed.spec!.renewTime!).toISOString(), "2026-01-01T00:00:05.000Z");
  assert.equal(
    new Date(renewed.spec!.acquireTime!).toISOString(),
    "2026-01-01T00:00:00.000Z",
  );
  const decoded = decodeHostReport(renewed.metadata!.annotations!["keelson.io/data-plane"]!);
  assert.ok(!("error" in decoded));
  assert.deepEqual(decoded.vips, []);
});

Deno.test("HostHeartbeat.writeOnce() re-reads after a conflict (another run of this host wrote it)", async () => {
  const leases = new MemoryLeases();
  const hb = new HostHeartbeat({
    leases,
    host: "cp-1",
    report: () => Promise.resolve(report("cp-1", [])),
  });
  await hb.writeOnce();
  // a previous process of this host renewed it behind our back
  const stale = leases.store.get("kube-system/keelson-host-cp-1")!;
  await leases.replace(stale);
  await hb.writeOnce();
  assert.equal(leases.writes, 3);
});

Deno.test("HostHeartbeat.run() writes at once on a change and stops on abort", async () => {
  const leases = new MemoryLeases();
  const hb = new HostHeartbeat({
    leases,
    host: "cp-1",
    report: () => Promise.resolve(report("cp-1", [])),
    renewMs: 60_000,
    debounceMs: 1,
  });
  const stop = new AbortController();
  const running = hb.run(stop.signal);
  await pollUntil("the first write", () => leases.writes >= 1, { intervalMs: 5 });
  assert.equal(leases.writes, 1);
  hb.changed();
  await pollUntil("the write after the change", () => leases.writes >= 2, { intervalMs: 5 });
  assert.equal(leases.writes, 2);
  stop.abort();
  await running;
});

const NODE_REF = (uid: string) => ({ apiVersion: "v1", kind: "Node", name: "cp-1", uid });

Deno.test("heartbeatOwnerReferences(): the host's Node as owner, followed, dropped, or left alone", () => {
  const other = { apiVersion: "example.com/v1", kind: "Thing", name: "t", uid: "u-thing" };
  // a Node: one reference, no blockOwnerDeletion (kubelet's node Leases carry the same)
  assert.deepEqual(heartbeatOwnerReferences(undefined, "cp-1", { uid: "u-1" }), [NODE_REF("u-1")]);
  // recreated with a new uid: the old reference is replaced, others kept
  assert.deepEqual(
    heartbeatOwnerReferences([other, NODE_REF("u-1")], "cp-1", { uid: "u-2" }),
    [other, NODE_REF("u-2")],
  );
  // no Node of that name (a control-plane host without kubelet): no reference
  assert.equal(heartbeatOwnerReferences(undefined, "cp-1", "absent"), undefined);
  assert.equal(heartbeatOwnerReferences([NODE_REF("u-1")], "cp-1", "absent"), undefined);
  assert.deepEqual(heartbeatOwnerReferences([other, NODE_REF("u-1")], "cp-1", "absent"), [other]);
  // the Node cache has not synced: what the Lease holds stays
  assert.deepEqual(heartbeatOwnerReferences([NODE_REF("u-1")], "cp-1", "unknown"), [
    NODE_REF("u-1"),
  ]);
  assert.equal(heartbeatOwnerReferences(undefined, "cp-1", "unknown"), undefined);
});

Deno.test("HostHeartbeat.writeOnce() sets the Node owner on create, on the renew after the Node appears, and follows a new uid", async () => {
  const leases = new MemoryLeases();
  let node: HostNode = "absent";
  const hb = new HostHeartbeat({
    leases,
    host: "cp-1",
    report: () => Promise.resolve(report("cp-1", [])),
    node: () => node,
  });
  const stored = () => leases.store.get("kube-system/keelson-host-cp-1")!;
  await hb.writeOnce();
  assert.equal(stored().metadata?.ownerReferences, undefined);
  node = { uid: "u-1" };
  await hb.writeOnce();
  assert.deepEqual(stored().metadata?.ownerReferences, [NODE_REF("u-1")]);
  node = "unknown";
  await hb.writeOnce();
  assert.deepEqual(stored().metadata?.ownerReferences, [NODE_REF("u-1")]);
  node = { uid: "u-2" };
  await hb.writeOnce();
  assert.deepEqual(stored().metadata?.ownerReferences, [NODE_REF("u-2")]);
  node = "absent";
  await hb.writeOnce();
  assert.equal(stored().metadata?.ownerReferences, undefined);
});

Deno.test("HostHeartbeat.writeOnce() creates the Lease again at once when it was deleted (the garbage collector, or by hand)", async () => {
  const leases = new MemoryLeases();
  const hb = new HostHeartbeat({
    leases,
    host: "cp-1",
    report: () => Promise.resolve(report("cp-1", [])),
    node: () => ({ uid: "u-1" }),
  });
  await hb.writeOnce();
  leases.store.clear();
  // the replace answers 404: read again (nothing) and create, in the same call
  leases.replace = () =>
    Promise.reject(new KubeApiError("gone", { code: 404, reason: "NotFound" }));
  await hb.writeOnce();
  assert.deepEqual(
    leases.store.get("kube-system/keelson-host-cp-1")?.metadata?.ownerReferences,
    [NODE_REF("u-1")],
  );
});

Deno.test("HostHeartbeat.writeOnce(): an owner change refused (403, older RBAC) still renews, and is tried again later", async () => {
  const leases = new MemoryLeases();
  let now = Date.parse("2026-01-01T00:00:00Z");
  let node: HostNode = "absent";
  const hb = new HostHeartbeat({
    leases,
    host: "cp-1",
    report: () => Promise.resolve(report("cp-1", [])),
    node: () => node,
    now: () => now,
  });
  await hb.writeOnce();
  // OwnerReferencesPermissionEnforcement without delete on Leases: owner changes are refused
  const replace = leases.replace.bind(leases);
  let refused = 0;
  leases.replace = (lease: V1Lease) => {
    const stored = leases.store.get("kube-system/keelson-host-cp-1");
    const changed = JSON.stringify(lease.metadata?.ownerReferences ?? []) !==
      JSON.stringify(stored?.metadata?.ownerReferences ?? []);
    if (changed) {
      refused++;
      return Promise.reject(
        new KubeApiError("cannot set an ownerRef on a resource you can't delete", { code: 403 }),
      );
    }
    return replace(lease);
  };
  node = { uid: "u-1" };
  now += 5000;
  await hb.writeOnce();
  const stored = () => leases.store.get("kube-system/keelson-host-cp-1")!;
  assert.equal(new Date(stored().spec!.renewTime!).toISOString(), "2026-01-01T00:00:05.000Z");
  assert.equal(stored().metadata?.ownerReferences, undefined);
  assert.equal(refused, 1);
  // the next renews do not ask again until OWNER_RETRY_MS passed
  now += 5000;
  await hb.writeOnce();
  assert.equal(refused, 1);
  leases.replace = replace; // RBAC applied again
  now += 10 * 60_000;
  await hb.writeOnce();
  assert.deepEqual(stored().metadata?.ownerReferences, [NODE_REF("u-1")]);
});

Deno.test("HostHeartbeat.writeOnce() publishes each report as it is, also when it changes back", async () => {
  const leases = new MemoryLeases();
  let vips = ["10.0.0.150"];
  const hb = new HostHeartbeat({
    leases,
    host: "cp-1",
    report: () => Promise.resolve(report("cp-1", vips)),
  });
  const published = async () => {
    await hb.writeOnce();
    const lease = leases.store.get("kube-system/keelson-host-cp-1")!;
    const decoded = decodeHostReport(lease.metadata!.annotations!["keelson.io/data-plane"]!);
    assert.ok(!("error" in decoded));
    return decoded.vips.map((v) => v.ip);
  };
  // unchanged renewals, a change, and the change undone: each write carries the report of its time
  for (const next of [["10.0.0.150"], ["10.0.0.150"], ["10.0.0.151"], ["10.0.0.150"], []]) {
    vips = next;
    assert.deepEqual(await published(), next);
  }
  assert.equal(leases.writes, 5, "every renewal is written, changed or not");
});
