import assert from "node:assert/strict";
import type { V1Service } from "@kubernetes/client-node";
import type { Lister } from "../../../../src/kube/ports.ts";
import { parseConfig } from "../../../../src/config/parse_config.ts";
import {
  REASON_ADDRESS_NOT_SERVED,
  UnservedAddressReporter,
} from "../../../../providers/baremetal/unserved_addresses.ts";
import { RecordingEventRecorder } from "../../_fakes/recording_event_recorder.ts";
import { turns } from "../../../_support/poll.ts";

function service(name: string, ips: string[]): V1Service {
  return {
    metadata: { name, namespace: "default", uid: `uid-${name}` },
    spec: { type: "LoadBalancer", ports: [{ port: 80, protocol: "TCP" }] },
    status: { loadBalancer: { ingress: ips.map((ip) => ({ ip })) } },
  };
}

/** A Service cache over a mutable map, counting whole-cache reads. */
function lister(services: V1Service[]): Lister<V1Service> & {
  map: Map<string, V1Service>;
  lists: number;
} {
  const map = new Map(services.map((s) => [`${s.metadata!.namespace}/${s.metadata!.name}`, s]));
  return {
    map,
    lists: 0,
    get: (key) => map.get(key),
    list() {
      this.lists++;
      return [...map.values()];
    },
  };
}

const tick = () => turns();

const CONFIG = parseConfig(
  `[keepalived]\nenabled = false\n[[pools]]\nname = "lan"\naddresses = ["192.0.2.0/29"]\n` +
    `[[machines]]\nname = "w-1"\ninternal_ips = ["10.0.0.21"]\n`,
  "k.toml",
);

Deno.test("UnservedAddressReporter warns once per address keepalived will not serve", () => {
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
  const services = lister([service("vrrp", ["224.0.0.18"])]);
  const read = () => {
    reads++;
    return { config: CONFIG, services };
  };
  for (let i = 0; i < 100; i++) reporter.schedule(read, () => events);
  await tick();
  assert.equal(reads, 1);
  assert.equal(events.events.length, 1);
  reporter.schedule(read, () => undefined);
  await tick();
  assert.equal(reads, 1, "a follower reads nothing");
});

Deno.test("UnservedAddressReporter.schedule(key) checks only the Services that changed, once the whole pass ran", async () => {
  const events = new RecordingEventRecorder();
  const reporter = new UnservedAddressReporter();
  const services = lister([service("good", ["192.0.2.2"]), service("vrrp", ["224.0.0.18"])]);
  const read = () => ({ config: CONFIG, services });
  // the first pass (a new leader) reads every Service
  reporter.schedule(read, () => events);
  await tick();
  assert.equal(services.lists, 1);
  assert.deepEqual(events.withReason(REASON_ADDRESS_NOT_SERVED).map((e) => e.object), [
    "Service/default/vrrp",
  ]);
  // a burst of per-Service changes: no whole-cache read, one Warning per new bad address
  for (let i = 0; i < 50; i++) {
    const s = service(`s-${i}`, [i % 10 === 0 ? "10.0.0.21" : `192.0.2.${(i % 5) + 1}`]);
    services.map.set(`default/s-${i}`, s);
    reporter.schedule(read, () => events, `default/s-${i}`);
  }
  await tick();
  assert.equal(services.lists, 1, "a Service event does not read the whole cache");
  const machine = events.withReason(REASON_ADDRESS_NOT_SERVED).filter((e) =>
    /machine "w-1"/.test(e.message ?? "")
  );
  assert.deepEqual(machine.map((e) => e.object), [
    "Service/default/s-0",
    "Service/default/s-10",
    "Service/default/s-20",
    "Service/default/s-30",
    "Service/default/s-40",
  ]);
  // an update that keeps the bad address: no new Warning
  const count = events.events.length;
  reporter.schedule(read, () => events, "default/vrrp");
  await tick();
  assert.equal(events.events.length, count);
  // fixed, then broken again: reported again (once each time it appears)
  services.map.set("default/vrrp", service("vrrp", ["192.0.2.4"]));
  reporter.schedule(read, () => events, "default/vrrp");
  await tick();
  assert.equal(events.events.length, count);
  services.map.set("default/vrrp", service("vrrp", ["224.0.0.18"]));
  reporter.schedule(read, () => events, "default/vrrp");
  await tick();
  assert.equal(events.events.length, count + 1);
  // deleted and created again with the same bad address: reported again
  services.map.delete("default/s-0");
  reporter.schedule(read, () => events, "default/s-0");
  await tick();
  services.map.set("default/s-0", service("s-0", ["10.0.0.21"]));
  reporter.schedule(read, () => events, "default/s-0");
  await tick();
  assert.equal(events.events.length, count + 2);
  assert.equal(services.lists, 1);
});

Deno.test("UnservedAddressReporter.schedule(key) checks everything again under a new configuration", async () => {
  const events = new RecordingEventRecorder();
  const reporter = new UnservedAddressReporter();
  const services = lister([service("a", ["192.0.2.9"]), service("b", ["192.0.2.2"])]);
  let config = CONFIG;
  const read = () => ({ config, services });
  reporter.schedule(read, () => events);
  await tick();
  // 192.0.2.9 is outside the /29
  assert.deepEqual(events.withReason(REASON_ADDRESS_NOT_SERVED).map((e) => e.object), [
    "Service/default/a",
  ]);
  // a reload shrinks the pool: an event on another Service makes the pass whole
  config = parseConfig(
    `[keepalived]\nenabled = false\n[[pools]]\nname = "lan"\naddresses = ["192.0.2.4/30"]\n` +
      `[[machines]]\nname = "w-1"\ninternal_ips = ["10.0.0.21"]\n`,
    "k.toml",
  );
  reporter.schedule(read, () => events, "default/a");
  await tick();
  assert.equal(services.lists, 2);
  assert.deepEqual(events.withReason(REASON_ADDRESS_NOT_SERVED).map((e) => e.object), [
    "Service/default/a",
    "Service/default/b",
  ]);
});
