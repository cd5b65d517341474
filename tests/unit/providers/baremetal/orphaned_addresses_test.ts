import assert from "node:assert/strict";
import type { V1Service } from "@kubernetes/client-node";
import { parseConfig } from "../../../../src/config/parse_config.ts";
import { objectKey } from "../../../../src/kube/ports.ts";
import { createLoadBalancer } from "../../../../providers/baremetal/load_balancer.ts";
import {
  REASON_ADDRESS_NOT_IN_POOL,
  reportOrphanedAddresses,
} from "../../../../providers/baremetal/orphaned_addresses.ts";
import { RecordingEventRecorder } from "../../_fakes/recording_event_recorder.ts";

function service(name: string, ip: string): V1Service {
  return {
    metadata: { name, namespace: "default", uid: `uid-${name}` },
    spec: { type: "LoadBalancer", ports: [{ port: 80, protocol: "TCP" }] },
    status: { loadBalancer: { ingress: [{ ip, ipMode: "VIP" }] } },
  };
}

Deno.test("reportOrphanedAddresses() warns once per address no pool offers any more", () => {
  const config = parseConfig(
    `[keepalived]\nenabled = false\n[[pools]]\nname = "lan"\naddresses = ["192.0.2.0/29"]\nreserved = ["192.0.2.3"]\n[[machines]]\nname = "w-1"\n`,
    "k.toml",
  );
  const all = [
    service("kept", "192.0.2.2"),
    service("shrunk", "192.0.2.9"),
    service("reserved", "192.0.2.3"),
  ];
  const byKey = new Map(all.map((s) => [objectKey(s), s]));
  const services = { get: (key: string) => byKey.get(key), list: () => all };
  const lb = createLoadBalancer({ config: () => config, services });
  const events = new RecordingEventRecorder();
  const count = reportOrphanedAddresses(lb.orphanedAllocations(), services, events);
  assert.equal(count, 2);
  const warnings = events.withReason(REASON_ADDRESS_NOT_IN_POOL);
  assert.equal(warnings.length, 2);
  assert.ok(warnings.every((e) => e.type === "Warning"));
  assert.match(warnings.map((e) => e.message).join("\n"), /192\.0\.2\.9 .*no pool contains it/);
  assert.match(warnings.map((e) => e.message).join("\n"), /192\.0\.2\.3 .*now reserved/);
  // neither keepalived nor BIRD serves an address no pool offers: the event must not say it is up
  for (const e of warnings) {
    assert.match(e.message ?? "", /stays in the Service's status but is not served/);
    assert.doesNotMatch(e.message ?? "", /stays up/);
  }
});
