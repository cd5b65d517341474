import assert from "node:assert/strict";
import type { V1Lease, V1Service } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { VipHostController } from "../../../../src/controllers/vip_hosts/vip_host_controller.ts";
import { LastingFindings } from "../../../../src/controllers/vip_hosts/decide_lasting.ts";
import { FakeEventRecorder, FakeInformer } from "../../_fakes/fake_cluster.ts";
import type { HostReport } from "../../../../src/status/host_report.ts";
import { heartbeatLease, lbService, report } from "../../status/_leases.ts";

const A = "a".repeat(64);
const B = "b".repeat(64);

function on(rep: HostReport, sha256: string): HostReport {
  return { ...rep, inventory: { sha256, since: "2026-01-01T11:00:00.000Z" } };
}

function setup() {
  const services = new FakeInformer<V1Service>();
  const leases = new FakeInformer<V1Lease>();
  const events = new FakeEventRecorder();
  const registry = new Registry();
  let now = 1_000_000;
  const controller = new VipHostController({
    services,
    leases,
    events,
    handles: () => true,
    registry,
    now: () => now,
    host: "cp-1",
    controlPlaneVips: () => ["10.0.0.5"],
  }, { graceMs: 3000, inventoryGraceMs: 20_000 });
  let writes = 0;
  const renew = (host: string, rep: HostReport) =>
    leases.upsert(heartbeatLease(host, rep, -(++writes) * 1000));
  return { services, events, registry, controller, renew, advance: (ms: number) => now += ms };
}

Deno.test("VipHostController: a host on another inventory than the leader: a Warning once it lasts, and the metrics", async () => {
  const { services, events, registry, controller, renew, advance } = setup();
  services.upsert(lbService("shop", "web", ["10.0.0.150"]));
  const beat = (sha3: string) => {
    renew("cp-1", on(report("cp-1", ["10.0.0.150"]), A));
    renew("cp-2", on(report("cp-2", []), A));
    renew("cp-3", on(report("cp-3", []), sha3));
  };
  beat(B);
  controller.evaluate(); // first read: nobody judged yet
  // judged from the second read on (the first saw no renewal): the grace runs from there
  for (let t = 0; t < 20; t++) {
    advance(1000);
    beat(B);
    controller.evaluate();
  }
  assert.equal(events.withReason("InventoryMismatch").length, 0, "not before the grace");
  const metrics = await registry.metrics();
  assert.match(metrics, /keelson_inventory_disagreement 1/);
  assert.match(metrics, new RegExp(`keelson_inventory_hosts\\{sha256="${A}"\\} 2`));
  assert.match(metrics, new RegExp(`keelson_inventory_hosts\\{sha256="${B}"\\} 1`));
  advance(1000);
  beat(B);
  controller.evaluate();
  assert.deepEqual(events.withReason("InventoryMismatch"), [{
    object: "Lease/kube-system/keelson-host-cp-3",
    type: "Warning",
    reason: "InventoryMismatch",
    message: "Host cp-3 runs another inventory (sha256 bbbbbbbbbbbb) than the leader cp-1 " +
      "(sha256 aaaaaaaaaaaa): copy the same file to every host (compare with sha256sum)",
  }]);
  // once, while it lasts; the file fixed: the metric goes back to 0
  advance(1000);
  beat(B);
  controller.evaluate();
  assert.equal(events.withReason("InventoryMismatch").length, 1);
  advance(1000);
  beat(A);
  controller.evaluate();
  assert.match(await registry.metrics(), /keelson_inventory_disagreement 0/);
});

Deno.test("VipHostController: a host serving an address no Service holds gets a Warning after the grace; the control-plane VIP does not", async () => {
  const { services, events, registry, controller, renew, advance } = setup();
  services.upsert(lbService("shop", "web", ["10.0.0.150"]));
  const beat = () => {
    renew("cp-1", report("cp-1", ["10.0.0.150", "10.0.0.5"]));
    renew("cp-2", report("cp-2", ["8.8.8.8", "224.0.0.18"]));
  };
  beat();
  controller.evaluate();
  for (let t = 0; t < 4; t++) {
    advance(1000);
    beat();
    controller.evaluate();
  }
  assert.deepEqual(
    events.withReason("AddressWithoutService").map((e) => [e.object, e.message]),
    [
      [
        "Lease/kube-system/keelson-host-cp-2",
        "Host cp-2 serves 224.0.0.18, which no Service holds and which is no control-plane VIP",
      ],
      [
        "Lease/kube-system/keelson-host-cp-2",
        "Host cp-2 serves 8.8.8.8, which no Service holds and which is no control-plane VIP",
      ],
    ],
  );
  const metrics = await registry.metrics();
  assert.match(metrics, /keelson_host_unheld_addresses\{host="cp-2"\} 2/);
  assert.match(metrics, /keelson_host_unheld_addresses\{host="cp-1"\} 0/);
});

Deno.test("LastingFindings: reported once after the grace, again only after going away", () => {
  const findings = new LastingFindings(1000);
  assert.deepEqual(findings.step(["x"], 0), []);
  assert.equal(findings.nextDeadline(), 1000);
  assert.deepEqual(findings.step(["x"], 1000), ["x"]);
  assert.deepEqual(findings.step(["x"], 5000), []);
  assert.deepEqual(findings.step([], 6000), []);
  assert.deepEqual(findings.step(["x"], 7000), []);
  assert.deepEqual(findings.step(["x"], 8000), ["x"]);
});

Deno.test("VipHostController: a split brain confirmed at the earlier host's next renewal is warned 3 s after the split began, not 3 s after the confirmation", () => {
  const { services, events, controller, renew, advance } = setup();
  services.upsert(lbService("shop", "web", ["10.0.0.150"]));
  renew("cp-1", report("cp-1", ["10.0.0.150"]));
  renew("cp-2", report("cp-2", []));
  controller.evaluate();
  advance(1000);
  renew("cp-1", report("cp-1", ["10.0.0.150"]));
  renew("cp-2", report("cp-2", []));
  controller.evaluate();
  // the split: cp-2 takes the VIP (its heartbeat at once); cp-1 renews only 2 s later
  advance(500);
  renew("cp-2", report("cp-2", ["10.0.0.150"]));
  assert.deepEqual(controller.evaluate()[0]?.hosts, ["cp-2"], "cp-1 superseded until it renews");
  advance(2000);
  renew("cp-1", report("cp-1", ["10.0.0.150"]));
  assert.deepEqual(controller.evaluate()[0]?.hosts, ["cp-1", "cp-2"]);
  assert.equal(events.withReason("VIPSplitBrain").length, 0, "2 s into the split");
  advance(999);
  controller.evaluate();
  assert.equal(events.withReason("VIPSplitBrain").length, 0, "2.999 s into the split");
  advance(1);
  controller.evaluate();
  assert.equal(events.withReason("VIPSplitBrain").length, 1, "3 s into the split");
});
