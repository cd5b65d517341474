import assert from "node:assert/strict";
import type { V1Node, V1Service } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { hostNode, hostReport } from "../../../src/agent/heartbeat.ts";
import { ConfigReloader } from "../../../src/config/reloader.ts";
import { HostReportSchema } from "../../../src/status/host_report.ts";
import { createLoadBalancer } from "../../../providers/baremetal/load_balancer.ts";
import { FakeInformer } from "../_fakes/fake_cluster.ts";
import { configWith, svc } from "../providers/baremetal/ipam/_helpers.ts";

Deno.test("hostNode(): the host's Node uid from the cache, absent without one, unknown before the cache synced", () => {
  const nodes = new FakeInformer<V1Node>();
  nodes.setSynced(false);
  nodes.upsert({ metadata: { name: "n-1", uid: "u-1" } });
  assert.equal(hostNode(nodes, "n-1"), "unknown");
  nodes.setSynced(true);
  assert.deepEqual(hostNode(nodes, "n-1"), { uid: "u-1" });
  // a control-plane host without kubelet has no Node
  assert.equal(hostNode(nodes, "cp-1"), "absent");
});

Deno.test("hostReport(): the reload time comes from the reloader and the pools from the provider, whatever the metrics registry holds", async () => {
  const dir = await Deno.makeTempDir({ prefix: "keelson-report-" });
  try {
    const registry = new Registry();
    const config = configWith([{ name: "lan", addresses: ["10.0.0.1-10.0.0.4"] }]);
    const reloader = new ConfigReloader(`${dir}/keelson.toml`, config, {
      registry,
      onChange: () => {},
      now: () => Date.parse("2026-05-04T03:02:01Z"),
    });
    const services = new FakeInformer<V1Service>();
    services.upsert(svc({ key: "web", ingress: ["10.0.0.2"] }));
    // no registry: the load balancer exports no gauge, and its usage still reaches the report
    const lb = createLoadBalancer({ config: () => config, services });
    // a metric renamed or removed (here: every one) cannot empty the report
    registry.clear();
    const report = hostReport({
      host: "cp-1",
      dataPlane: undefined,
      reloads: reloader,
      pools: lb.poolUsage,
    });
    assert.equal(report.reload.ok, true);
    assert.equal(report.reload.at, "2026-05-04T03:02:01.000Z");
    assert.deepEqual(report.pools, [{ pool: "lan", family: "IPv4", total: 4, used: 1 }]);
    assert.equal(HostReportSchema.safeParse(report).success, true, "a valid report");
    assert.equal(report.inventory, undefined, "no digest known: none reported");
    const withInventory = hostReport({
      host: "cp-1",
      dataPlane: undefined,
      reloads: reloader,
      inventory: () => ({ sha256: "c".repeat(64), since: new Date("2026-05-04T03:02:01Z") }),
    });
    assert.deepEqual(withInventory.inventory, {
      sha256: "c".repeat(64),
      since: "2026-05-04T03:02:01.000Z",
    });
    assert.equal(HostReportSchema.safeParse(withInventory).success, true);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
