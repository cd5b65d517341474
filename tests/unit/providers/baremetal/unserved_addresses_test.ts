import assert from "node:assert/strict";
import type { V1Service } from "@kubernetes/client-node";
import { parseConfig } from "../../../../src/config/parse_config.ts";
import {
  REASON_ADDRESS_NOT_SERVED,
  UnservedAddressReporter,
} from "../../../../providers/baremetal/unserved_addresses.ts";
import { RecordingEventRecorder } from "../../_fakes/recording_event_recorder.ts";

function service(name: string, ips: string[]): V1Service {
  return {
    metadata: { name, namespace: "default", uid: `uid-${name}` },
    spec: { type: "LoadBalancer", ports: [{ port: 80, protocol: "TCP" }] },
    status: { loadBalancer: { ingress: ips.map((ip) => ({ ip })) } },
  };
}

const CONFIG = parseConfig(
  `[keepalived]\nenabled = false\n[[pools]]\nname = "lan"\naddresses = ["192.0.2.0/29"]\n` +
    `[[machines]]\nname = "w-1"\ninternal_ips = ["10.0.0.21"]\n`,
  "k.toml",
);

Deno.test("UnservedAddressReporter warns once per address keepalived will not serve (issue 9 item 1)", () => {
  const events = new RecordingEventRecorder();
  const reporter = new UnservedAddressReporter();
  const services = [
    service("good", ["192.0.2.2"]),
    service("vrrp", ["224.0.0.18", "192.0.2.3"]),
    service("machine", ["10.0.0.21"]),
  ];
  assert.equal(reporter.report(CONFIG, services, events), 2);
  const warnings = events.withReason(REASON_ADDRESS_NOT_SERVED);
  assert.deepEqual(warnings.map((e) => e.object), [
    "Service/default/vrrp",
    "Service/default/machine",
  ]);
  assert.ok(warnings.every((e) => e.type === "Warning"));
  assert.match(warnings[0]!.message ?? "", /"224\.0\.0\.18".*no pool offers it/);
  assert.match(warnings[1]!.message ?? "", /machine "w-1"/);
  // the same state again: nothing new
  assert.equal(reporter.report(CONFIG, services, events), 0);
});

Deno.test("UnservedAddressReporter.schedule() shares one pass per burst and stays quiet when not leading", async () => {
  const events = new RecordingEventRecorder();
  const reporter = new UnservedAddressReporter();
  let reads = 0;
  const read = () => {
    reads++;
    return { config: CONFIG, services: [service("vrrp", ["224.0.0.18"])] };
  };
  for (let i = 0; i < 100; i++) reporter.schedule(read, () => events);
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(reads, 1);
  assert.equal(events.events.length, 1);
  reporter.schedule(read, () => undefined);
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(reads, 1, "a follower reads nothing");
});
