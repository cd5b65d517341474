import assert from "node:assert/strict";
import type { V1Service } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { ProviderError } from "../../../../src/cloud/provider.ts";
import type { Config } from "../../../../src/config/types.ts";
import { ConfigSchema } from "../../../../src/config/schema.ts";
import { type InformerEvent, type Lister, objectKey } from "../../../../src/kube/ports.ts";
import {
  AllocationError,
  createLoadBalancer,
} from "../../../../providers/baremetal/load_balancer.ts";
import { FREE_METRIC, IN_USE_METRIC, TOTAL_METRIC } from "../../../../src/metrics/pool_usage.ts";
import { configWith, svc, type SvcSpec } from "./ipam/_helpers.ts";

/** A lister over a map, changed by the test as the API would be. */
class MapLister implements Lister<V1Service> {
  readonly items = new Map<string, V1Service>();
  get(key: string): V1Service | undefined {
    return this.items.get(key);
  }
  list(): V1Service[] {
    return [...this.items.values()];
  }
  put(spec: SvcSpec): V1Service {
    const service = svc(spec);
    this.items.set(objectKey(service), service);
    return service;
  }
}

function setup(config: Config = configWith([{ name: "lan", addresses: ["10.0.0.1-10.0.0.3"] }])) {
  const services = new MapLister();
  const registry = new Registry();
  let current = config;
  const lb = createLoadBalancer({ config: () => current, services, registry });
  return { lb, services, registry, reconfigure: (c: Config) => (current = c) };
}

async function ips(promise: Promise<{ ingress?: { ip?: string }[] }>): Promise<string[]> {
  return ((await promise).ingress ?? []).map((e) => e.ip ?? "");
}

Deno.test("createLoadBalancer().ensureLoadBalancer() returns VIP ingress with its pool and never hands one address out twice before the status lands", async () => {
  const { lb, services } = setup();
  const s1 = services.put({ key: "s1" });
  const status = await lb.ensureLoadBalancer("kubernetes", s1, []);
  assert.deepEqual(status, {
    ingress: [{ ip: "10.0.0.1", ipMode: "VIP" }],
    serviceAnnotations: { "keelson.io/allocated-from-pool": "lan" },
  });
  // what it records, it declares as a record: the controller does not ensure again for it
  assert.deepEqual(lb.recordAnnotations, Object.keys(status.serviceAnnotations ?? {}));
  // s1's status is not written yet: s2 must still not get .1
  const s2 = services.put({ key: "s2" });
  assert.deepEqual(await ips(lb.ensureLoadBalancer("kubernetes", s2, [])), ["10.0.0.2"]);
  // the statuses land; s1 is ensured again and keeps its address
  services.put({ key: "s1", ingress: ["10.0.0.1"] });
  services.put({ key: "s2", ingress: ["10.0.0.2"] });
  assert.deepEqual(
    await ips(lb.ensureLoadBalancer("kubernetes", services.get("default/s1")!, [])),
    ["10.0.0.1"],
  );
});

Deno.test("createLoadBalancer() rebuilds from Service statuses after a restart", async () => {
  const { lb, services } = setup();
  services.put({
    key: "old",
    ingress: ["10.0.0.1"],
    annotations: { "keelson.io/allocated-from-pool": "lan" },
  });
  services.put({ key: "foreign", type: "ClusterIP", ingress: ["10.0.0.2"] });
  const fresh = services.put({ key: "new" });
  assert.deepEqual(await ips(lb.ensureLoadBalancer("kubernetes", fresh, [])), ["10.0.0.3"]);
  assert.equal(lb.allocator.inUse("10.0.0.1"), true);
  assert.equal(lb.allocator.inUse("10.0.0.2"), true);
});

Deno.test("createLoadBalancer().ensureLoadBalancer() throws an AllocationError with a reason", async () => {
  const { lb, services } = setup(configWith([{ name: "lan", addresses: ["10.0.0.1"] }]));
  services.put({ key: "s1", ingress: ["10.0.0.1"] });
  const cases: [SvcSpec, string, boolean][] = [
    [{ key: "s2" }, "PoolExhausted", true],
    [{ key: "s2", loadBalancerIP: "10.0.0.1" }, "AddressInUse", true],
    [{ key: "s2", loadBalancerIP: "10.9.9.9" }, "AddressNotInPool", false],
    [{ key: "s2", loadBalancerIP: "bogus" }, "InvalidRequest", false],
    [{ key: "s2", annotations: { "keelson.io/address-pool": "x" } }, "UnknownPool", false],
  ];
  for (const [spec, reason, retriable] of cases) {
    const error = await lb.ensureLoadBalancer("kubernetes", services.put(spec), []).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(error instanceof AllocationError, reason);
    assert.ok(error instanceof ProviderError);
    assert.equal(error.reason, reason);
    assert.equal(error.retriable, retriable, reason);
    assert.match(error.message, /^Cannot allocate an address for service "default\/s2": /);
  }
});

Deno.test("createLoadBalancer().getLoadBalancer() exists only for our class with ingress addresses", async () => {
  const { lb } = setup();
  const held = svc({ key: "a", ingress: ["10.0.0.1"] });
  assert.deepEqual(await lb.getLoadBalancer("k", held), {
    status: { ingress: [{ ip: "10.0.0.1" }] },
    exists: true,
  });
  // a type change keeps it ours until the controller cleans up
  assert.equal(
    (await lb.getLoadBalancer("k", svc({ key: "a", type: "ClusterIP", ingress: ["10.0.0.1"] })))
      .exists,
    true,
  );
  assert.equal((await lb.getLoadBalancer("k", svc({ key: "a" }))).exists, false);
  assert.equal(
    (await lb.getLoadBalancer(
      "k",
      svc({ key: "a", loadBalancerClass: "x.io/y", ingress: ["10.0.0.1"] }),
    )).exists,
    false,
  );
  assert.equal(
    lb.getLoadBalancerName("k", { metadata: { uid: "1234-5678-90ab-cdef-1234-5678-90ab-cdef" } }),
    "a1234567890abcdef1234567890abcdef".slice(0, 32),
  );
});

Deno.test("createLoadBalancer().ensureLoadBalancerDeleted() releases an address whose status never landed", async () => {
  const { lb, services } = setup(configWith([{ name: "lan", addresses: ["10.0.0.1"] }]));
  const s1 = services.put({ key: "s1" });
  assert.deepEqual(await ips(lb.ensureLoadBalancer("k", s1, [])), ["10.0.0.1"]);
  await lb.ensureLoadBalancerDeleted("k", s1);
  services.items.delete("default/s1");
  assert.deepEqual(await ips(lb.ensureLoadBalancer("k", services.put({ key: "s2" }), [])), [
    "10.0.0.1",
  ]);
});

Deno.test("createLoadBalancer() keeps addresses of a removed pool, reports them, and exports pool gauges", async () => {
  const { lb, services, registry, reconfigure } = setup();
  services.put({ key: "s1", ingress: ["10.0.0.1"] });
  const s2 = services.put({ key: "s2" });
  await lb.ensureLoadBalancer("k", s2, []);
  const text = await registry.metrics();
  assert.match(text, new RegExp(`^${TOTAL_METRIC}\\{pool="lan",family="IPv4"\\} 3$`, "m"));
  assert.match(text, new RegExp(`^${IN_USE_METRIC}\\{pool="lan",family="IPv4"\\} 2$`, "m"));

  reconfigure(configWith([{ name: "new", addresses: ["10.1.0.1"] }]));
  const s1 = services.get("default/s1")!;
  assert.deepEqual(await ips(lb.ensureLoadBalancer("k", s1, [])), ["10.0.0.1"]);
  assert.deepEqual(lb.orphanedAllocations().map((o) => `${o.serviceKey} ${o.ip} ${o.why}`), [
    "default/s1 10.0.0.1 outside",
    "default/s2 10.0.0.2 outside",
  ]);
  // the gauges share one refresh per 500 ms within a scrape: read the usage itself here
  assert.deepEqual(lb.poolUsage(), [{ pool: "new", family: "IPv4", total: 1, used: 0 }]);
});

Deno.test("createLoadBalancer() allocates nothing before the Service cache has synced", async () => {
  const lb = createLoadBalancer({
    config: () => configWith([{ name: "lan", addresses: ["10.0.0.1"] }]),
    services: () => undefined,
  });
  await assert.rejects(
    lb.ensureLoadBalancer("k", svc({ key: "s1" }), []),
    (e: unknown) => e instanceof ProviderError && e.retriable && /not synced/.test(e.message),
  );
});

Deno.test("createLoadBalancer() follows status changes and deletions seen in the lister", async () => {
  const { lb, services } = setup(configWith([{ name: "lan", addresses: ["10.0.0.1-10.0.0.4"] }]));
  services.put({ key: "s1", ingress: ["10.0.0.1"] });
  assert.deepEqual(await ips(lb.ensureLoadBalancer("k", services.put({ key: "s2" }), [])), [
    "10.0.0.2",
  ]);
  services.put({ key: "s2", ingress: ["10.0.0.2"] });
  // s1 moves to .1 -> .3 behind our back (a new object), then s2 is deleted
  services.put({ key: "s1", ingress: ["10.0.0.3"] });
  services.items.delete("default/s2");
  assert.deepEqual(await ips(lb.ensureLoadBalancer("k", services.put({ key: "s3" }), [])), [
    "10.0.0.1",
  ]);
  assert.deepEqual(await ips(lb.ensureLoadBalancer("k", services.put({ key: "s4" }), [])), [
    "10.0.0.2",
  ]);
});

Deno.test("createLoadBalancer() holds both the old and the new address while a move is being written", async () => {
  const { lb, services } = setup();
  services.put({ key: "s1", ingress: ["10.0.0.1"] });
  const moved = services.put({ key: "s1", ingress: ["10.0.0.1"], loadBalancerIP: "10.0.0.3" });
  assert.deepEqual(await ips(lb.ensureLoadBalancer("k", moved, [])), ["10.0.0.3"]);
  // neither .1 (still in the status) nor .3 (about to be written) may go to s2
  assert.deepEqual(await ips(lb.ensureLoadBalancer("k", services.put({ key: "s2" }), [])), [
    "10.0.0.2",
  ]);
  await assert.rejects(
    lb.ensureLoadBalancer("k", services.put({ key: "s3" }), []),
    (e: unknown) => e instanceof AllocationError && e.reason === "PoolExhausted",
  );
  // the new status lands: .1 is free again
  services.put({ key: "s1", ingress: ["10.0.0.3"], loadBalancerIP: "10.0.0.3" });
  assert.deepEqual(await ips(lb.ensureLoadBalancer("k", services.get("default/s3")!, [])), [
    "10.0.0.1",
  ]);
});

/** A MapLister that notifies subscribers like an informer, and counts full lists. */
class InformerLister extends MapLister {
  readonly handlers = new Set<(event: InformerEvent<V1Service>) => void>();
  lists = 0;
  override list(): V1Service[] {
    this.lists++;
    return super.list();
  }
  subscribe(handler: (event: InformerEvent<V1Service>) => void): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }
  override put(spec: SvcSpec): V1Service {
    const service = super.put(spec);
    for (const handler of this.handlers) handler({ type: "update", object: service });
    return service;
  }
  remove(key: string): void {
    const service = this.items.get(`default/${key}`)!;
    this.items.delete(`default/${key}`);
    for (const handler of this.handlers) handler({ type: "delete", object: service });
  }
}

Deno.test("createLoadBalancer() over an informer re-reads only the Services that changed, and still follows statuses and deletions", async () => {
  const services = new InformerLister();
  const config = configWith([{ name: "lan", addresses: ["10.0.0.1-10.0.0.4"] }]);
  const lb = createLoadBalancer({ config: () => config, services });
  services.put({ key: "s1", ingress: ["10.0.0.1"] });
  assert.deepEqual(await ips(lb.ensureLoadBalancer("k", services.put({ key: "s2" }), [])), [
    "10.0.0.2",
  ]);
  assert.equal(services.lists, 1, "one full pass at the start");
  services.put({ key: "s2", ingress: ["10.0.0.2"] });
  services.put({ key: "s1", ingress: ["10.0.0.3"] });
  services.remove("s2");
  assert.deepEqual(await ips(lb.ensureLoadBalancer("k", services.put({ key: "s3" }), [])), [
    "10.0.0.1",
  ]);
  assert.deepEqual(await ips(lb.ensureLoadBalancer("k", services.put({ key: "s4" }), [])), [
    "10.0.0.2",
  ]);
  assert.deepEqual(await ips(lb.ensureLoadBalancer("k", services.put({ key: "s5" }), [])), [
    "10.0.0.4",
  ]);
  await assert.rejects(
    lb.ensureLoadBalancer("k", services.put({ key: "s6" }), []),
    (error: unknown) => error instanceof AllocationError && error.reason === "PoolExhausted",
  );
  assert.equal(services.lists, 1, "later ensures looked only at the changes");
});

Deno.test("createLoadBalancer() exports pool usage as one metric family (the one the alert rules and dashboard read)", async () => {
  const { lb, services, registry } = setup();
  await lb.ensureLoadBalancer("k", services.put({ key: "s1" }), []);
  const families = (await registry.getMetricsAsJSON()).map((m) => m.name).sort();
  assert.deepEqual(families, [FREE_METRIC, TOTAL_METRIC, IN_USE_METRIC].sort());
});

Deno.test("createLoadBalancer(): a cache not synced yet keeps the last usage; any other failure while refreshing is thrown, not swallowed", async () => {
  const config = configWith([{ name: "lan", addresses: ["10.0.0.1-10.0.0.3"] }]);
  let synced = false;
  const broken = new MapLister();
  broken.list = () => {
    throw new TypeError("Cannot read the cache");
  };
  const registry = new Registry();
  const lb = createLoadBalancer({
    config: () => config,
    services: broken,
    hasSynced: () => synced,
    registry,
  });
  // not synced: expected, nothing restored yet, and nothing thrown
  assert.deepEqual(lb.orphanedAllocations(), []);
  assert.deepEqual(lb.poolUsage(), []);
  synced = true;
  await assert.rejects(registry.metrics(), TypeError, "a scrape fails rather than lie");
  assert.throws(() => lb.orphanedAllocations(), TypeError);
  assert.throws(() => lb.poolUsage(), TypeError);
});

Deno.test("createLoadBalancer().servingHosts() names the hosts of the pools that hold the addresses", () => {
  const config = ConfigSchema.parse({
    pools: [
      { name: "edge", addresses: ["192.0.2.1-192.0.2.9"], served_by: { roles: ["worker"] } },
      { name: "lan", addresses: ["192.0.2.20-192.0.2.29"] },
    ],
    machines: [
      { name: "cp-1", role: "control-plane", internal_ips: ["10.0.0.11"] },
      { name: "w-1", internal_ips: ["10.0.0.21"] },
      { name: "w-2", internal_ips: ["10.0.0.22"], state: "retired" },
    ],
  });
  const { lb } = setup(config);
  assert.deepEqual(lb.servingHosts(["192.0.2.5"]), ["w-1"]);
  assert.deepEqual(lb.servingHosts(["192.0.2.21"]), ["cp-1"]);
  assert.deepEqual(lb.servingHosts(["192.0.2.5", "192.0.2.21"]), ["cp-1", "w-1"]);
  assert.deepEqual(lb.servingHosts(["198.51.100.1", "not an address"]), []);
});
