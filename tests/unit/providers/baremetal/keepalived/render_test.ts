import assert from "node:assert/strict";
import {
  buildKeepalivedModel,
  type KeepalivedModel,
  type KeepalivedModelInput,
} from "../../../../../providers/baremetal/keepalived/model.ts";
import {
  renderKeepalivedConfig,
  renderWithdrawnConfig,
} from "../../../../../providers/baremetal/keepalived/render.ts";
import { testConfig, vipRange } from "./_inventory.ts";
import { assertGolden } from "../../../../_support/golden.ts";

const TESTDATA = new URL("./testdata/", import.meta.url);

function build(input: KeepalivedModelInput): KeepalivedModel {
  const model = buildKeepalivedModel(input);
  if ("error" in model) throw new Error(model.error);
  return model;
}

async function golden(name: string, text: string): Promise<void> {
  await assertGolden(new URL(name, TESTDATA), text);
}

const THREE_HOST_VIPS = ["10.250.0.150", "10.250.0.151", "10.250.0.152", "10.250.0.160"];

Deno.test("renderKeepalivedConfig() matches the 3-host golden files", async () => {
  for (const host of ["cp-1", "cp-2", "cp-3"]) {
    // as `keelson run` renders it: with the notify FIFO for the user Keelson runs as
    const model = build({
      config: testConfig(),
      host,
      serviceVips: THREE_HOST_VIPS,
      notifyFifoUser: "keelson",
    });
    await golden(`three_host_${host}.conf`, renderKeepalivedConfig(model));
  }
});

Deno.test("renderKeepalivedConfig() matches the IPv6 golden file", async () => {
  const config = testConfig({
    controlPlaneVips: ["fd00:250::100"],
    ips: [["fd00:250::11"], ["fd00:250::12"], ["fd00:250::13"]],
  });
  const model = build({
    config,
    host: "cp-1",
    serviceVips: ["fd00:250::150", "FD00:250:0:0::151", "fd00:250::1:0:0:152"],
  });
  await golden("ipv6.conf", renderKeepalivedConfig(model));
});

Deno.test("renderKeepalivedConfig() matches the no-services golden file", async () => {
  const model = build({ config: testConfig(), host: "cp-1", serviceVips: [] });
  await golden("no_services.conf", renderKeepalivedConfig(model));
});

Deno.test("renderKeepalivedConfig() matches the 45-VIP excluded-spill golden file", async () => {
  const config = testConfig({ keepalived: { vrid_range: [100, 103] } });
  const model = build({ config, host: "cp-2", serviceVips: vipRange(45) });
  const text = renderKeepalivedConfig(model);
  assert.match(text, /virtual_ipaddress_excluded \{/);
  await golden("spill_45.conf", text);
});

Deno.test("renderKeepalivedConfig() matches the multicast golden file", async () => {
  const config = testConfig({ keepalived: { unicast: false } });
  const model = build({ config, host: "cp-3", serviceVips: THREE_HOST_VIPS });
  const text = renderKeepalivedConfig(model);
  assert.doesNotMatch(text, /unicast/);
  await golden("multicast.conf", text);
});

Deno.test("renderKeepalivedConfig() renders the same text on every host except priority and src", () => {
  const strip = (text: string) =>
    text.replace(/for host cp-\d/, "").replace(/priority \d+/g, "").replace(
      /unicast_src_ip[^]*?unicast_peer \{[^}]*\}/g,
      "",
    );
  const texts = ["cp-1", "cp-2", "cp-3"].map((host) =>
    strip(renderKeepalivedConfig(
      build({ config: testConfig(), host, serviceVips: vipRange(30) }),
    ))
  );
  assert.equal(texts[0], texts[1]);
  assert.equal(texts[1], texts[2]);
});

const HOSTILE = [
  "10.0.0.1 }\nnotify /bin/sh",
  '10.0.0.1\n}\nvrrp_script x { script "/bin/sh -c id" }',
  '10.0.0.1"',
  "10.0.0.1 dev eth0",
  "10.0.0.1/32",
  "{",
  "}",
  "notify",
  "script",
  "10.0.0.１",
  "ünïcödé",
  "10.0.0.1\u0000",
  " 10.0.0.1",
  "fd00::1%eth0;notify",
  "",
];

Deno.test("renderKeepalivedConfig() never emits hostile Service VIP strings", () => {
  const model = build({ config: testConfig(), host: "cp-1", serviceVips: HOSTILE });
  const text = renderKeepalivedConfig(model);
  for (const word of ["notify", "script", "/bin/sh", "dev eth0;", "ü", "１", "%", "\u0000", "\r"]) {
    assert.ok(!text.includes(word), `output contains ${JSON.stringify(word)}`);
  }
  // every non-comment line is one of the few shapes this renderer knows
  const allowed =
    /^(|#.*|[a-z_]+ [a-z0-9_]+ \{|\s*[a-z_]+( [a-zA-Z0-9_.:/"-]+)?( dev [a-z0-9.-]+)?( \{)?|\s*[0-9a-f.:]+(\/\d+ dev [a-z0-9.-]+)?|\s*\}|\s*keelson_apiserver)$/;
  for (const line of text.split("\n")) assert.match(line, allowed);
  assert.equal(model.skipped.length, HOSTILE.length);
  assert.ok(text.split("\n").every((line) => /^[\x20-\x7e]*$/.test(line)), "non-ASCII output");
});

Deno.test("renderKeepalivedConfig() takes no names from Services at all", () => {
  // Service names, annotations and labels have no way in: the model input has no field for
  // them. This checks that extra properties smuggled in are ignored, not rendered.
  const input = {
    config: testConfig(),
    host: "cp-1",
    serviceVips: ["10.250.0.150"],
    serviceName: "evil\n}\nnotify /bin/sh",
    annotations: { "x": 'script "/bin/sh"' },
  } as KeepalivedModelInput;
  const text = renderKeepalivedConfig(build(input));
  assert.ok(!text.includes("evil") && !text.includes("/bin/sh"));
});

Deno.test("renderKeepalivedConfig() throws on a tampered model (defence in depth)", () => {
  const base = () => build({ config: testConfig(), host: "cp-1", serviceVips: ["10.250.0.150"] });
  const cases: [string, (m: KeepalivedModel) => void][] = [
    ["host", (m) => (m.host = "cp-1\nnotify /bin/sh")],
    ["interface", (m) => (m.interface = "eth0 }")],
    ["instance name", (m) => (m.instances[0]!.name = "x { notify")],
    ["vrid", (m) => (m.instances[0]!.vrid = 256)],
    ["priority", (m) => (m.instances[0]!.priority = 1.5)],
    ["ip family", (m) => (m.instances[1]!.vips[0] = { family: 6, value: 1n })],
    ["ip value", (m) => (m.instances[1]!.vips[0] = { family: 4, value: 1n << 40n })],
    ["ip type", (m) => (m.instances[1]!.vips[0] = { family: 4, value: "1 }" as never })],
    ["track path", (m) => (m.trackFile!.path = '/run/x" notify "/bin/sh')],
    ["advert", (m) => (m.advertIntMs = 205)],
    ["duplicate vrid", (m) => (m.instances[1]!.vrid = m.instances[0]!.vrid)],
  ];
  for (const [what, tamper] of cases) {
    const model = base();
    tamper(model);
    assert.throws(() => renderKeepalivedConfig(model), RangeError, what);
  }
});

Deno.test("renderKeepalivedConfig() writes the notify FIFO in global_defs only when a user is given", () => {
  const withFifo = renderKeepalivedConfig(
    build({ config: testConfig(), host: "cp-1", serviceVips: [], notifyFifoUser: "keelson" }),
  );
  assert.match(
    withFifo,
    /^global_defs \{\n {4}vrrp_notify_fifo "\/run\/keelson-daemons\/keepalived-notify\.fifo" keelson\n {4}fifo_write_vrrp_states_on_reload\n\}$/m,
  );
  const without = renderKeepalivedConfig(
    build({ config: testConfig(), host: "cp-1", serviceVips: [] }),
  );
  assert.doesNotMatch(without, /global_defs|notify_fifo/);
});

Deno.test("renderKeepalivedConfig() refuses a FIFO user or path that could inject keepalived syntax", () => {
  const model = build({ config: testConfig(), host: "cp-1", serviceVips: [] });
  for (const user of ["root\n}", "a b", "Keelson", "", "x".repeat(33), 'k"']) {
    assert.throws(
      () => renderKeepalivedConfig({ ...model, notifyFifo: { path: "/run/keelson/f", user } }),
      RangeError,
      JSON.stringify(user),
    );
  }
  for (const path of ["relative", "/run/../etc/x", '/run/k"', "/run/k f"]) {
    assert.throws(
      () => renderKeepalivedConfig({ ...model, notifyFifo: { path, user: "keelson" } }),
      RangeError,
      path,
    );
  }
});

Deno.test("renderWithdrawnConfig() holds comments only: no instance, no global_defs, no VIP", () => {
  const text = renderWithdrawnConfig("cp-1");
  assert.match(text, /^# Generated by Keelson for host cp-1\. /);
  assert.deepEqual(text.split("\n").filter((l) => l !== "" && !l.startsWith("#")), []);
  assert.throws(() => renderWithdrawnConfig("cp-1\nvrrp_instance x {"), RangeError);
});
