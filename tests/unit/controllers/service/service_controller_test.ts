import assert from "node:assert/strict";
import { ProviderError } from "../../../../src/cloud/provider.ts";
import { KubeApiError } from "../../../../src/kube/ports.ts";
import { LOAD_BALANCER_CLEANUP_FINALIZER } from "../../../../src/controllers/service/finalizer.ts";
import {
  FakeLoadBalancer,
  handlesDefault,
  ingressOf,
  lbService,
  ServiceCluster,
  settle,
  startController,
} from "./_harness.ts";
import { pollUntil } from "../../../_support/poll.ts";

function clusterWithNodes(): ServiceCluster {
  const cluster = new ServiceCluster();
  cluster.addNode({ metadata: { name: "cp-1" }, spec: { providerID: "baremetal://cp-1" } });
  cluster.addNode({ metadata: { name: "w-1" }, spec: { providerID: "baremetal://w-1" } });
  return cluster;
}

function reasonsOf(events: { reason?: string; object: string }[], object: string): string[] {
  return events.filter((event) => event.object === object).map((event) => event.reason ?? "");
}

Deno.test("ServiceController writes the finalizer and the ingress in one request after ensuring, once, and one event", async () => {
  const cluster = clusterWithNodes();
  const lb = new FakeLoadBalancer(["203.0.113.10"], cluster.log);
  cluster.addService(lbService("web"));
  const running = await startController(cluster, lb);
  try {
    assert.deepEqual(cluster.log, [
      "ensure default/web",
      "status default/web: finalizer+ ingress",
    ]);
    const service = cluster.services.get("default/web")!;
    assert.deepEqual(service.metadata?.finalizers, [LOAD_BALANCER_CLEANUP_FINALIZER]);
    assert.deepEqual(service.status?.loadBalancer?.ingress, [
      { ip: "203.0.113.10", ipMode: "VIP" },
    ]);
    assert.deepEqual(reasonsOf(running.events.events, "Service/default/web"), [
      "EnsuredLoadBalancer",
    ]);
    assert.equal(cluster.writes.length, 1, "one API write (the event is recorded apart)");
    // A re-sync with the same answer writes nothing.
    running.controller.requeue("default/web");
    await settle();
    assert.equal(cluster.log.filter((line) => line.startsWith("status")).length, 1);
    assert.equal(cluster.writes.length, 1);
  } finally {
    await running.stop();
  }
});

Deno.test("ServiceController never touches a Service of another class, nor an unset class when default_class is off", async () => {
  const cluster = clusterWithNodes();
  const lb = new FakeLoadBalancer(["203.0.113.10", "203.0.113.11"], cluster.log);
  cluster.addService(lbService("other", { class: "example.com/other" }));
  cluster.addService(lbService("unset"));
  const foreign = lbService("foreign-deleting", { class: "example.com/other" });
  foreign.metadata!.finalizers = [LOAD_BALANCER_CLEANUP_FINALIZER];
  cluster.addService(foreign);
  cluster.deleteService("default/foreign-deleting");
  const onlyClass = (service: Parameters<typeof handlesDefault>[0]) =>
    service.spec?.type === "LoadBalancer" &&
    service.spec.loadBalancerClass === "keelson.io/vip";
  const running = await startController(cluster, lb, { handles: onlyClass });
  try {
    cluster.addService(lbService("ours", { class: "keelson.io/vip" }));
    await settle();
    assert.deepEqual(cluster.log, [
      "ensure default/ours",
      "status default/ours: finalizer+ ingress",
    ]);
    assert.equal(cluster.services.get("default/other")?.metadata?.finalizers, undefined);
    assert.equal(cluster.services.get("default/unset")?.status, undefined);
    assert.deepEqual(cluster.services.get("default/foreign-deleting")?.metadata?.finalizers, [
      LOAD_BALANCER_CLEANUP_FINALIZER,
    ]);
    assert.deepEqual(
      running.events.events.map((event) => event.object).filter((o) => !o.endsWith("/ours")),
      [],
    );
  } finally {
    await running.stop();
  }
});

Deno.test("ServiceController releases the address, clears the ingress and removes the finalizer when the type changes away", async () => {
  const cluster = clusterWithNodes();
  const lb = new FakeLoadBalancer(["203.0.113.10"], cluster.log);
  cluster.addService(lbService("web"));
  const running = await startController(cluster, lb);
  try {
    cluster.log.length = 0;
    // The API server wipes the class when the type changes away.
    cluster.editService("default/web", (service) => {
      service.spec!.type = "ClusterIP";
      delete service.spec!.loadBalancerClass;
    });
    await settle();
    assert.deepEqual(cluster.log, [
      "delete default/web",
      "status default/web: finalizer- ingress-",
    ]);
    const service = cluster.services.get("default/web")!;
    assert.deepEqual(service.metadata?.finalizers ?? [], []);
    assert.deepEqual(ingressOf(cluster, "default/web"), []);
    assert.equal(lb.allocations.size, 0);
    assert.deepEqual(reasonsOf(running.events.events, "Service/default/web").slice(1), [
      "DeletedLoadBalancer",
    ]);
  } finally {
    await running.stop();
  }
});

Deno.test("ServiceController lets a deleted Service go only after its address is released", async () => {
  const cluster = clusterWithNodes();
  const lb = new FakeLoadBalancer(["203.0.113.10"], cluster.log);
  cluster.addService(lbService("web"));
  const running = await startController(cluster, lb);
  try {
    cluster.log.length = 0;
    cluster.deleteService("default/web");
    assert.ok(cluster.services.get("default/web"), "the finalizer holds the Service");
    await settle();
    assert.equal(cluster.services.get("default/web"), undefined);
    assert.deepEqual(cluster.log, [
      "delete default/web",
      "status default/web: finalizer- ingress-",
    ]);
    assert.equal(lb.allocations.size, 0);
  } finally {
    await running.stop();
  }
});

Deno.test("ServiceController reports a provider error with SyncLoadBalancerFailed and AllocationFailed and retries with backoff", async () => {
  const cluster = clusterWithNodes();
  const lb = new FakeLoadBalancer(["203.0.113.10"], cluster.log);
  lb.failNext.push(
    Object.assign(new ProviderError("keepalived is not answering"), { reason: "pool busy" }),
  );
  cluster.addService(lbService("web"));
  const running = await startController(cluster, lb);
  try {
    assert.deepEqual(ingressOf(cluster, "default/web"), []);
    const failedEvent = running.events.withReason("SyncLoadBalancerFailed")[0];
    assert.equal(failedEvent?.type, "Warning");
    assert.equal(failedEvent?.message, "Error syncing load balancer: keepalived is not answering");
    assert.match(running.events.withReason("AllocationFailed")[0]?.message ?? "", /pool busy/);
    running.clock.advance(999);
    await settle();
    assert.deepEqual(ingressOf(cluster, "default/web"), [], "no retry before the backoff");
    running.clock.advance(1);
    await settle();
    assert.deepEqual(ingressOf(cluster, "default/web"), ["203.0.113.10"]);
  } finally {
    await running.stop();
  }
});

Deno.test("ServiceController gives a pending Service the address it asked for once its holder is deleted", async () => {
  const cluster = clusterWithNodes();
  const lb = new FakeLoadBalancer(["203.0.113.10", "203.0.113.11"], cluster.log);
  cluster.addService(lbService("first", { ip: "203.0.113.10" }));
  const running = await startController(cluster, lb);
  try {
    cluster.addService(lbService("second", { ip: "203.0.113.10" }));
    await settle();
    assert.deepEqual(ingressOf(cluster, "default/second"), []);
    const allocation = running.events.withReason("AllocationFailed");
    assert.equal(allocation.length, 1);
    assert.match(
      allocation[0]?.message ?? "",
      /\(address "203\.0\.113\.10" is in use by service "default\/first"\)/,
    );
    cluster.deleteService("default/first");
    await settle();
    assert.equal(cluster.services.get("default/first"), undefined);
    assert.deepEqual(ingressOf(cluster, "default/second"), ["203.0.113.10"]);
  } finally {
    await running.stop();
  }
});

Deno.test("ServiceController serves a Service pending on an exhausted pool after another is deleted", async () => {
  const cluster = clusterWithNodes();
  const lb = new FakeLoadBalancer(["203.0.113.10"], cluster.log);
  cluster.addService(lbService("a"));
  const running = await startController(cluster, lb);
  try {
    cluster.addService(lbService("b"));
    await settle();
    assert.deepEqual(ingressOf(cluster, "default/b"), []);
    cluster.deleteService("default/a");
    await settle();
    assert.deepEqual(ingressOf(cluster, "default/b"), ["203.0.113.10"]);
  } finally {
    await running.stop();
  }
});

Deno.test("ServiceController re-syncs on an annotation change but not on a status-only change", async () => {
  const cluster = clusterWithNodes();
  const lb = new FakeLoadBalancer(["203.0.113.10"], cluster.log);
  cluster.addService(lbService("web"));
  const running = await startController(cluster, lb);
  try {
    const ensures = () => cluster.log.filter((line) => line.startsWith("ensure")).length;
    assert.equal(ensures(), 1);
    cluster.editService("default/web", (service) => {
      service.status = {
        loadBalancer: { ingress: [{ ip: "203.0.113.10", ipMode: "VIP" }] },
        conditions: [{
          type: "Example",
          status: "True",
          reason: "Test",
          message: "",
          lastTransitionTime: new Date(0),
        }],
      };
    });
    cluster.editService("default/web", (service) => {
      service.metadata!.labels = { team: "a" };
    });
    await settle();
    assert.equal(ensures(), 1);
    cluster.editService("default/web", (service) => {
      service.metadata!.annotations = { "example.com/note": "x" };
    });
    await settle();
    assert.equal(ensures(), 2);
  } finally {
    await running.stop();
  }
});

Deno.test("ServiceController.run() syncs nothing before the Service and Node caches have synced", async () => {
  const cluster = clusterWithNodes();
  const lb = new FakeLoadBalancer(["203.0.113.10", "203.0.113.11"], cluster.log);
  cluster.services.setSynced(false);
  cluster.addService(lbService("web"));
  const running = await startController(cluster, lb);
  try {
    cluster.addService(lbService("api"));
    await settle();
    assert.deepEqual(cluster.log, []);
    cluster.services.setSynced(true);
    await pollUntil(
      "both Services served",
      () =>
        ingressOf(cluster, "default/web").length > 0 &&
        ingressOf(cluster, "default/api").length > 0,
    );
    await settle();
    assert.equal(ingressOf(cluster, "default/web").length, 1);
    assert.equal(ingressOf(cluster, "default/api").length, 1);
  } finally {
    await running.stop();
  }
});

Deno.test("ServiceController passes only eligible Nodes and calls updateLoadBalancer when the node set changes", async () => {
  const cluster = clusterWithNodes();
  cluster.addNode({
    metadata: {
      name: "excluded",
      labels: { "node.kubernetes.io/exclude-from-external-load-balancers": "true" },
    },
  });
  const seen: string[][] = [];
  const lb = new FakeLoadBalancer(["203.0.113.10"], cluster.log);
  const ensure = lb.ensureLoadBalancer.bind(lb);
  lb.ensureLoadBalancer = (clusterName, service, nodes) => {
    seen.push(nodes.map((node) => node.metadata?.name ?? ""));
    return ensure(clusterName, service, nodes);
  };
  cluster.addService(lbService("web"));
  const running = await startController(cluster, lb);
  try {
    assert.deepEqual(seen, [["cp-1", "w-1"]]);
    cluster.updateNode("w-1", (node) => {
      node.status = { conditions: [{ type: "Ready", status: "False" }] };
    });
    await settle();
    assert.equal(lb.updates, 0, "readiness does not change the node set");
    cluster.addNode({ metadata: { name: "w-2" }, spec: { providerID: "baremetal://w-2" } });
    await settle();
    assert.equal(lb.updates, 1);
    assert.equal(running.events.withReason("UpdatedLoadBalancer").length, 1);
    assert.equal(seen.length, 1, "a node change is an update, not a full ensure");
    const metric = await running.registry.getSingleMetric(
      "service_controller_loadbalancer_sync_total",
    )?.get();
    assert.equal(metric?.values[0]?.value, 1);
  } finally {
    await running.stop();
  }
});

Deno.test("ServiceController warns when a Local-policy Service has no endpoint on a control-plane Node", async () => {
  const cluster = clusterWithNodes();
  const lb = new FakeLoadBalancer(["203.0.113.10", "203.0.113.11"], cluster.log);
  const local = lbService("local");
  local.spec!.externalTrafficPolicy = "Local";
  const onCp = lbService("on-cp");
  onCp.spec!.externalTrafficPolicy = "Local";
  cluster.addService(local);
  cluster.addService(onCp);
  const running = await startController(cluster, lb, {
    endpoints: {
      endpointNodeNames: (service) => service.metadata?.name === "local" ? ["w-1"] : ["cp-1"],
      servingNodeNames: () => ["cp-1"],
    },
  });
  try {
    const warnings = running.events.withReason("LocalTrafficDropped");
    assert.equal(warnings.length, 1);
    assert.equal(warnings[0]?.object, "Service/default/local");
    assert.match(warnings[0]?.message ?? "", /"203\.0\.113\.1\d" will be dropped/);
  } finally {
    await running.stop();
  }
});

Deno.test("ServiceController releases the address of a Service that vanished without its finalizer", async () => {
  const cluster = clusterWithNodes();
  const lb = new FakeLoadBalancer(["203.0.113.10"], cluster.log);
  cluster.addService(lbService("web"));
  const running = await startController(cluster, lb);
  try {
    assert.equal(lb.allocations.size, 1);
    cluster.services.remove("default/web");
    await settle();
    assert.equal(lb.allocations.size, 0);
    assert.deepEqual(reasonsOf(running.events.events, "Service/default/web").slice(1), [
      "DeletedLoadBalancer",
    ]);
  } finally {
    await running.stop();
  }
});

Deno.test("ServiceController retries a refused status write, then writes the finalizer and ingress together", async () => {
  const cluster = clusterWithNodes();
  const lb = new FakeLoadBalancer(["203.0.113.10"], cluster.log);
  cluster.failOnce(
    "patchServiceStatus",
    new KubeApiError('services "web" is forbidden', { code: 403, reason: "Forbidden" }),
  );
  cluster.addService(lbService("web"));
  const running = await startController(cluster, lb);
  try {
    assert.equal(cluster.services.get("default/web")?.metadata?.finalizers, undefined);
    assert.match(
      running.events.withReason("SyncLoadBalancerFailed")[0]?.message ?? "",
      /forbidden/,
    );
    assert.deepEqual(running.events.withReason("EnsuredLoadBalancer"), []);
    running.clock.advance(1_000);
    await settle();
    assert.deepEqual(ingressOf(cluster, "default/web"), ["203.0.113.10"]);
    assert.deepEqual(cluster.services.get("default/web")?.metadata?.finalizers, [
      LOAD_BALANCER_CLEANUP_FINALIZER,
    ]);
    assert.equal(lb.allocations.size, 1, "the retry kept the same allocation");
  } finally {
    await running.stop();
  }
});

Deno.test("ServiceController drops the sync of a Service deleted before its first write, and releases its address", async () => {
  const cluster = clusterWithNodes();
  const lb = new FakeLoadBalancer(["203.0.113.10"], cluster.log);
  // the Service is gone by the time the status patch arrives (404)
  cluster.failOnce(
    "patchServiceStatus",
    new KubeApiError('services "web" not found', { code: 404, reason: "NotFound" }),
  );
  cluster.addService(lbService("web"));
  const running = await startController(cluster, lb);
  try {
    assert.deepEqual(running.events.withReason("SyncLoadBalancerFailed"), []);
    assert.equal(lb.allocations.size, 1);
    cluster.services.remove("default/web");
    await settle();
    assert.equal(lb.allocations.size, 0, "released through the delete event");
  } finally {
    await running.stop();
  }
});
