/**
 * The kubelet Leases as this reader sees them change: by its own clock, never by the times
 * written in them; what it found at its first list is "never seen changing".
 */
import assert from "node:assert/strict";
import type { V1Lease } from "@kubernetes/client-node";
import { KubeletLeaseObserver } from "../../../../src/controllers/out_of_service/kubelet_lease_observer.ts";
import { FakeInformer } from "../../_fakes/fake_cluster.ts";

function lease(name: string, version: number, renewTime = "2020-01-01T00:00:00.000000Z"): V1Lease {
  return {
    metadata: { name, namespace: "kube-node-lease", resourceVersion: String(version) },
    spec: {
      holderIdentity: name,
      leaseDurationSeconds: 40,
      renewTime: renewTime as unknown as Date,
    },
  };
}

function setup(synced = true) {
  const informer = new FakeInformer<V1Lease>();
  informer.setSynced(synced);
  let now = 1_000;
  const observer = new KubeletLeaseObserver(informer, () => now);
  return { informer, observer, advance: (ms: number) => (now += ms) };
}

Deno.test("KubeletLeaseObserver: the first list is the baseline; a later version is a change, timed by this reader", () => {
  const { informer, observer, advance } = setup();
  informer.upsert(lease("w-1", 1));
  informer.upsert(lease("w-2", 1));
  const stop = observer.start();
  assert.deepEqual(observer.view("w-1"), {
    changedAgoMs: undefined,
    leaseDurationSeconds: 40,
    otherChangedAgoMs: undefined,
  });
  advance(3_000);
  // renewTime far in the future: never read as a time
  informer.upsert(lease("w-1", 2, "2999-01-01T00:00:00.000000Z"));
  advance(4_000);
  informer.upsert(lease("w-2", 2));
  advance(1_000);
  assert.deepEqual(observer.view("w-1"), {
    changedAgoMs: 5_000,
    leaseDurationSeconds: 40,
    otherChangedAgoMs: 1_000,
  });
  assert.deepEqual(observer.view("w-2"), {
    changedAgoMs: 1_000,
    leaseDurationSeconds: 40,
    otherChangedAgoMs: 5_000,
  });
  // the same version again (a resync, a relist): no change
  advance(2_000);
  informer.upsert(lease("w-1", 2));
  assert.equal(observer.view("w-1")?.changedAgoMs, 7_000);
  // w-2 renews again: the other Lease w-1 sees is still w-2's latest change
  informer.upsert(lease("w-2", 3));
  assert.equal(observer.view("w-1")?.otherChangedAgoMs, 0);
  assert.equal(observer.view("w-2")?.otherChangedAgoMs, 7_000);
  stop();
  informer.upsert(lease("w-1", 3));
  assert.equal(observer.view("w-1")?.changedAgoMs, 7_000, "stopped observing");
});

Deno.test("KubeletLeaseObserver: a Lease created after the first list was written while watching; a deleted one is forgotten", () => {
  const { informer, observer, advance } = setup();
  observer.start();
  advance(500);
  informer.upsert(lease("w-3", 7));
  advance(250);
  assert.equal(observer.view("w-3")?.changedAgoMs, 250);
  informer.remove("kube-node-lease/w-3");
  assert.equal(observer.view("w-3"), undefined);
  assert.equal(observer.view("w-9"), undefined);
});

Deno.test("KubeletLeaseObserver: before the cache synced, nothing is judged and what arrives is the baseline", () => {
  const { informer, observer, advance } = setup(false);
  observer.start();
  informer.upsert(lease("w-1", 1));
  assert.equal(observer.view("w-1"), undefined);
  informer.setSynced(true);
  advance(1_000);
  assert.equal(observer.view("w-1")?.changedAgoMs, undefined);
  informer.upsert(lease("w-1", 2));
  assert.equal(observer.view("w-1")?.changedAgoMs, 0);
});

Deno.test("KubeletLeaseObserver: a duration that is not an integer is not believed", () => {
  const { informer, observer } = setup();
  const odd = lease("w-1", 1);
  odd.spec!.leaseDurationSeconds = 1.5;
  informer.upsert(odd);
  observer.start();
  assert.equal(observer.view("w-1")?.leaseDurationSeconds, undefined);
});

Deno.test("KubeletLeaseObserver tells a Lease that appears, goes or is first seen changing, not each renewal", () => {
  const { informer, observer, advance } = setup();
  informer.upsert(lease("w-1", 1));
  const told: string[] = [];
  const stop = observer.start((node) => told.push(node));
  advance(1_000);
  informer.upsert(lease("w-1", 2)); // first seen changing
  informer.upsert(lease("w-1", 3)); // a renewal
  informer.upsert(lease("w-1", 3)); // the same version again
  informer.upsert(lease("w-2", 1)); // created while watched
  informer.upsert(lease("w-2", 2)); // a renewal
  informer.upsert({ ...lease("w-2", 3), spec: { leaseDurationSeconds: 60 } }); // a new duration
  informer.remove("kube-node-lease/w-1");
  assert.deepEqual(told, ["w-1", "w-2", "w-2", "w-1"]);
  stop();
});
