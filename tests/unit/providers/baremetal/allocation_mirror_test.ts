import assert from "node:assert/strict";
import type { V1Service } from "@kubernetes/client-node";
import { AllocationMirror } from "../../../../providers/baremetal/allocation_mirror.ts";
import { FakeInformer } from "../../_fakes/fake_cluster.ts";
import { configWith, svc } from "./ipam/_helpers.ts";

/** A Service informer that counts full lists and single reads. */
class CountingInformer extends FakeInformer<V1Service> {
  lists = 0;
  gets = 0;
  override list(): V1Service[] {
    this.lists++;
    return super.list();
  }
  override get(key: string): V1Service | undefined {
    this.gets++;
    return super.get(key);
  }
}

Deno.test("AllocationMirror: empty, then following an informer's changes; new pools or a new cache bring one full pass", () => {
  const mirror = new AllocationMirror();
  assert.equal(mirror.phase, "empty");
  const pools = configWith([{ name: "lan", addresses: ["10.0.0.1-10.0.0.4"] }]);
  const services = new CountingInformer();
  services.upsert(svc({ key: "a", ingress: ["10.0.0.1"] }));
  mirror.sync(pools, services);
  assert.equal(mirror.phase, "following");
  assert.equal(services.lists, 1, "the first sync lists every Service");
  assert.equal(mirror.allocator.inUse("10.0.0.1"), true);

  // a change is looked up by its key; nothing else is read
  services.upsert(svc({ key: "b", ingress: ["10.0.0.2"] }));
  mirror.sync(pools, services);
  assert.equal(services.lists, 1);
  assert.equal(services.gets, 1);
  assert.equal(mirror.allocator.inUse("10.0.0.2"), true);
  mirror.sync(pools, services);
  assert.equal(services.gets, 1, "no change, nothing read");

  // new pools: every Service again, once
  mirror.sync(configWith([{ name: "lan", addresses: ["10.0.0.1-10.0.0.8"] }]), services);
  assert.equal(services.lists, 2);
  assert.equal(mirror.phase, "following");

  // a new cache: every Service of it, once, then its changes
  const next = new CountingInformer();
  next.upsert(svc({ key: "c", ingress: ["10.0.0.3"] }));
  mirror.sync(pools, next);
  assert.equal(next.lists, 1);
  assert.deepEqual(mirror.allocator.serviceKeys(), ["default/c"], "the old cache's are released");
  services.upsert(svc({ key: "d", ingress: ["10.0.0.4"] }));
  mirror.sync(pools, next);
  assert.equal(mirror.allocator.inUse("10.0.0.4"), false, "the old cache is no longer followed");
});

Deno.test("AllocationMirror: over a plain lister every sync is a full pass", () => {
  const mirror = new AllocationMirror();
  const items = new Map<string, V1Service>();
  let lists = 0;
  const lister = {
    get: (key: string) => items.get(key),
    list: () => {
      lists++;
      return [...items.values()];
    },
  };
  const pools = configWith([{ name: "lan", addresses: ["10.0.0.1-10.0.0.4"] }]);
  mirror.sync(pools, lister);
  assert.equal(mirror.phase, "listing");
  items.set("default/a", svc({ key: "a", ingress: ["10.0.0.1"] }));
  mirror.sync(pools, lister);
  assert.equal(lists, 2);
  assert.equal(mirror.allocator.inUse("10.0.0.1"), true);
});

Deno.test("AllocationMirror: an assigned address stays held until the status shows it; forget releases it", () => {
  const mirror = new AllocationMirror();
  const pools = configWith([{ name: "lan", addresses: ["10.0.0.1-10.0.0.4"] }]);
  const services = new CountingInformer();
  services.upsert(svc({ key: "a" }));
  mirror.sync(pools, services);
  mirror.assigned("default/a", ["10.0.0.1"], []);
  mirror.sync(pools, services);
  assert.equal(mirror.allocator.inUse("10.0.0.1"), true, "pending: held without a status");
  services.upsert(svc({ key: "a", ingress: ["10.0.0.1"] }));
  mirror.sync(pools, services);
  assert.equal(mirror.allocator.inUse("10.0.0.1"), true, "shown by the status");
  mirror.forget("default/a");
  assert.equal(mirror.allocator.inUse("10.0.0.1"), false);
  // the status still shows it until the controller clears it: read again at the next sync
  mirror.sync(pools, services);
  assert.equal(mirror.allocator.inUse("10.0.0.1"), true);
});

Deno.test("AllocationMirror.sync() throws what the cache throws", () => {
  const mirror = new AllocationMirror();
  const pools = configWith([{ name: "lan", addresses: ["10.0.0.1"] }]);
  const broken = {
    get: () => undefined,
    list: (): V1Service[] => {
      throw new RangeError("Cannot list Services: broken cache");
    },
  };
  assert.throws(() => mirror.sync(pools, broken), RangeError);
});

Deno.test("AllocationMirror: a Service deleted just before the pools change is released", () => {
  const mirror = new AllocationMirror();
  const services = new CountingInformer();
  services.upsert(svc({ key: "a", ingress: ["10.0.0.1"] }));
  mirror.sync(configWith([{ name: "lan", addresses: ["10.0.0.1-10.0.0.4"] }]), services);
  assert.equal(mirror.allocator.inUse("10.0.0.1"), true);
  services.remove("default/a");
  mirror.sync(configWith([{ name: "lan", addresses: ["10.0.0.1-10.0.0.8"] }]), services);
  assert.equal(mirror.allocator.inUse("10.0.0.1"), false);
  assert.deepEqual(mirror.allocator.serviceKeys(), []);
});
