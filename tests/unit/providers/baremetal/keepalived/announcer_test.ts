import assert from "node:assert/strict";
import {
  KeepalivedAnnouncer,
  renderHostKeepalived,
  serviceVipsInFile,
} from "../../../../../providers/baremetal/keepalived/announcer.ts";
import { reset } from "@logtape/logtape";
import { captureLogs } from "../../../_fakes/captured_logs.ts";
import { testConfig, vipRange } from "./_inventory.ts";

function render(vips: string[], keepalived: Record<string, unknown> = {}): string {
  const rendered = renderHostKeepalived({
    config: testConfig({
      keepalived: { max_vips_per_instance: 2, ...keepalived },
      ips: [["10.250.0.11", "fd00::11"], ["10.250.0.12", "fd00::12"], ["10.250.0.13", "fd00::13"]],
    }),
    host: "cp-1",
    serviceVips: vips,
  });
  if ("error" in rendered) throw new Error(rendered.error);
  return rendered.text;
}

Deno.test("serviceVipsInFile() reads back every Service VIP of a rendered file, listed or excluded", () => {
  const vips = [...vipRange(80), "fd00::150", "fd00::151"];
  const text = render(vips);
  assert.match(text, /virtual_ipaddress_excluded/);
  assert.deepEqual(serviceVipsInFile(text).sort(), [...vips].sort());
  assert.deepEqual(serviceVipsInFile(render([])), []); // the control-plane VIP is not one
  assert.deepEqual(serviceVipsInFile("vrrp_instance x {\n    virtual_ipaddress {\n"), []);
});

Deno.test("KeepalivedAnnouncer.sync() applies inventory changes before any Service cache exists", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/keelson.conf`;
    const vips = vipRange(5);
    await Deno.writeTextFile(file, render(vips, { config_file: file }));
    const applied: string[] = [];
    const config = testConfig({
      keepalived: { config_file: file, garp_master_refresh: 30, max_vips_per_instance: 2 },
    });
    const announcer = new KeepalivedAnnouncer({
      config: () => config,
      configFile: config.keepalived.config_file,
      host: "cp-1",
      applier: {
        apply: (text) => {
          applied.push(text);
          return Promise.resolve({ result: "success", reloaded: true, message: "captured" });
        },
      },
    });
    await announcer.sync("configuration reloaded");
    assert.equal(applied.length, 1);
    assert.match(applied[0]!, /garp_master_refresh 30/);
    assert.deepEqual(serviceVipsInFile(applied[0]!).sort(), [...vips].sort());

    // no file yet: the control-plane VIP alone
    await Deno.remove(file);
    await announcer.sync("startup");
    assert.match(applied[1]!, /10\.250\.0\.100\/32/);
    assert.deepEqual(serviceVipsInFile(applied[1]!), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("KeepalivedAnnouncer.sync() renders once for a burst of calls", async () => {
  const config = testConfig();
  const services = vipRange(50).map((ip, i) => ({
    metadata: { name: `s${i}`, namespace: "default" },
    spec: { type: "LoadBalancer" },
    status: { loadBalancer: { ingress: [{ ip }] } },
  }));
  let lists = 0;
  const applied: string[] = [];
  const announcer = new KeepalivedAnnouncer({
    config: () => config,
    configFile: config.keepalived.config_file,
    host: "cp-1",
    applier: {
      apply: (text) => {
        applied.push(text);
        return Promise.resolve({ result: "success", reloaded: true, message: "captured" });
      },
    },
  });
  const first = announcer.setServiceSource({
    services: {
      list: () => {
        lists++;
        return services;
      },
      get: () => undefined,
    },
    hasSynced: () => true,
  });
  // what an informer's initial list does: one event per Service, synchronously
  const burst = services.map(() => announcer.sync("services changed"));
  await Promise.all([first, ...burst]);
  assert.equal(applied.length, 1);
  assert.equal(lists, 1);
  assert.deepEqual(serviceVipsInFile(applied[0]!).sort(), vipRange(50).sort());
  await announcer.sync("later");
  assert.equal(applied.length, 2, "a later call renders again");
});

Deno.test("KeepalivedAnnouncer skips a hostile Service address, applies the rest and counts it", async () => {
  const { Registry } = await import("prom-client");
  const registry = new Registry();
  const applied: string[] = [];
  const config = testConfig();
  const services = [
    { name: "good", ip: "10.250.0.150" },
    { name: "vrrp", ip: "224.0.0.18" },
    { name: "peer", ip: "10.250.0.12" },
  ].map(({ name, ip }) => ({
    metadata: { name, namespace: "default" },
    spec: { type: "LoadBalancer" },
    status: { loadBalancer: { ingress: [{ ip }] } },
  }));
  const announcer = new KeepalivedAnnouncer({
    config: () => config,
    configFile: config.keepalived.config_file,
    host: "cp-1",
    registry,
    applier: {
      apply: (text) => {
        applied.push(text);
        return Promise.resolve({ result: "success", reloaded: true, message: "captured" });
      },
    },
  });
  await announcer.setServiceSource({
    services: { list: () => services, get: () => undefined },
    hasSynced: () => true,
  });
  assert.equal(applied.length, 1);
  assert.deepEqual(serviceVipsInFile(applied[0]!), ["10.250.0.150"]);
  assert.deepEqual(announcer.serviceVips(), ["10.250.0.150"]);
  const metric = await registry.getSingleMetric("keelson_keepalived_skipped_addresses")!.get();
  assert.equal(metric.values[0]!.value, 2);
});

Deno.test("KeepalivedAnnouncer keeps the VIPs of the file keepalived reads, not of a reloaded [keepalived] config_file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const started = `${dir}/started.conf`, reloaded = `${dir}/reloaded.conf`;
    await Deno.writeTextFile(started, render(vipRange(3)));
    await Deno.writeTextFile(reloaded, render(vipRange(5)));
    const applied: string[] = [];
    const config = testConfig({ keepalived: { config_file: reloaded } });
    const announcer = new KeepalivedAnnouncer({
      config: () => config,
      configFile: started,
      host: "cp-1",
      applier: {
        apply: (text) => {
          applied.push(text);
          return Promise.resolve({ result: "success", reloaded: true, message: "captured" });
        },
      },
    });
    await announcer.sync("configuration reloaded");
    assert.deepEqual(serviceVipsInFile(applied[0]!).sort(), vipRange(3).sort());
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an address kept from the file on disk that no pool offers is logged as that, not as a Service's", async () => {
  const dir = await Deno.makeTempDir();
  const records = await captureLogs();
  try {
    const file = `${dir}/keelson.conf`;
    // written when a pool offered 10.250.0.130; the inventory now offers only 10.250.1.0/24
    await Deno.writeTextFile(file, render(["10.250.0.130"], { config_file: file }));
    const config = testConfig({
      keepalived: { config_file: file },
      pools: [{ name: "narrowed", addresses: ["10.250.1.0/24"] }],
    });
    const announcer = new KeepalivedAnnouncer({
      config: () => config,
      configFile: file,
      host: "cp-1",
      applier: {
        apply: () => Promise.resolve({ result: "success", reloaded: true, message: "captured" }),
      },
    });
    await announcer.sync("startup");
    const lines = records.map((r) => r.message.map(String).join(""))
      .filter((line) => line.startsWith("Not serving"));
    // before: "Not serving 10.250.0.130 of service (from the file on disk): ..." (no Service)
    assert.equal(lines.length, 1, lines.join("\n"));
    assert.match(
      lines[0]!,
      new RegExp(
        `^Not serving 10\\.250\\.0\\.130, kept from ${file} until the Service cache syncs: `,
      ),
    );
    assert.doesNotMatch(lines[0]!, /of service/);
  } finally {
    await reset();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("KeepalivedAnnouncer: a NotReady Node takes the Service instances out of the file and brings them back, said once each way", async () => {
  const records = await captureLogs();
  try {
    const config = testConfig();
    const vips = vipRange(6);
    const services = vips.map((ip, i) => ({
      metadata: { name: `s${i}`, namespace: "default" },
      spec: { type: "LoadBalancer" },
      status: { loadBalancer: { ingress: [{ ip }] } },
    }));
    const applied: string[] = [];
    let ready = true;
    const announcer = new KeepalivedAnnouncer({
      config: () => config,
      configFile: config.keepalived.config_file,
      host: "cp-1",
      applier: {
        apply: (text) => {
          applied.push(text);
          return Promise.resolve({ result: "success", reloaded: true, message: "captured" });
        },
      },
    });
    await announcer.setServiceSource({
      services: { list: () => services, get: () => undefined },
      hasSynced: () => true,
      nodeReady: () => ready,
    });
    assert.deepEqual(serviceVipsInFile(applied.at(-1)!).sort(), [...vips].sort());
    ready = false;
    await announcer.sync("this host's Node readiness changed");
    await announcer.sync("services changed");
    assert.deepEqual(serviceVipsInFile(applied.at(-1)!), []);
    assert.match(applied.at(-1)!, /vrrp_instance keelson_cp_v4/, "the control-plane VIP stays");
    ready = true;
    await announcer.sync("this host's Node readiness changed");
    assert.deepEqual(serviceVipsInFile(applied.at(-1)!).sort(), [...vips].sort());
    const lines = records.map((r) => r.message.map(String).join(""))
      .filter((line) => /holds back|serves its VIPs through keepalived again/.test(line));
    assert.deepEqual(lines, [
      'This host holds back its Service VIPs through keepalived: Node "cp-1" is not Ready',
      "This host serves its VIPs through keepalived again",
    ]);
  } finally {
    await reset();
  }
});
