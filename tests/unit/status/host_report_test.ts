import assert from "node:assert/strict";
import { decodeHostReport, heartbeatLeaseName } from "../../../src/status/host_report.ts";
import { encodeHostReport } from "../../../src/status/encode_host_report.ts";
import { report } from "./_leases.ts";

Deno.test("encodeHostReport() and decodeHostReport() round-trip a report", () => {
  const r = report("cp-1", ["10.0.0.150"], { all: ["10.0.0.150", "10.0.0.151"] });
  assert.deepEqual(decodeHostReport(encodeHostReport(r)), r);
  assert.equal(heartbeatLeaseName("cp-1"), "keelson-host-cp-1");
});

Deno.test("decodeHostReport() drops fields a newer host added (top level, reload) and keeps the rest", () => {
  const good = JSON.parse(encodeHostReport(report("cp-1", ["10.0.0.150"])));
  const newer = { ...good, later: [{ x: 1 }], reload: { ...good.reload, later: true } };
  assert.deepEqual(decodeHostReport(JSON.stringify(newer)), decodeHostReport(JSON.stringify(good)));
});

Deno.test("decodeHostReport() is strict: unknown fields inside a list entry, bad values and oversize are refused", () => {
  const good = JSON.parse(encodeHostReport(report("cp-1", ["10.0.0.150"])));
  const cases: [string, unknown][] = [
    ["unknown field of an announcement", {
      ...good,
      announcements: [{ ...good.announcements[0], extra: 1 }],
    }],
    ["unknown field of an older reader's instance", {
      ...good,
      instances: [{ ...good.instances[0], extra: 1 }],
    }],
    ["version", { ...good, v: 2 }],
    ["host", { ...good, host: "CP_1" }],
    ["non-canonical IP", { ...good, vips: [{ ip: "010.0.0.1", since: good.vips[0].since }] }],
    ["not an IP", { ...good, vips: [{ ip: "10.0.0.1; x", since: good.vips[0].since }] }],
    ["state", { ...good, announcements: [{ ...good.announcements[0], state: "LEADER" }] }],
    ["a daemon's word for a state", {
      ...good,
      announcements: [{ ...good.announcements[0], state: "MASTER" }],
    }],
    ["an older reader's state", {
      ...good,
      instances: [{ ...good.instances[0], state: "LEADER" }],
    }],
    ["time", { ...good, vips: [{ ip: "10.0.0.150", since: "yesterday" }] }],
    ["negative pool", {
      ...good,
      pools: [{ pool: "lan", family: "IPv4", total: -1, used: 0 }],
    }],
  ];
  for (const [what, value] of cases) {
    const decoded = decodeHostReport(JSON.stringify(value));
    assert.ok("error" in decoded, what);
  }
  assert.deepEqual(decodeHostReport("{"), { error: "not JSON" });
  assert.ok("error" in decodeHostReport(" ".repeat(200_000)));
});

Deno.test("encodeHostReport() refuses to publish what a reader would refuse", () => {
  assert.throws(() => encodeHostReport({ ...report("cp-1", []), host: "Not A Name" }));
});

Deno.test("a host holding 1000 VIPs publishes a report that fits and parses", () => {
  const vips = Array.from({ length: 1000 }, (_, i) => `10.250.${Math.floor(i / 250)}.${i % 250}`);
  const text = encodeHostReport(report("cp-1", vips, { all: vips }));
  assert.ok(text.length < 192 * 1024, `${text.length} bytes`);
  assert.ok(!("error" in decodeHostReport(text)));
});

Deno.test("decodeHostReport(): the BGP sessions round-trip, a report without them (older hosts) stays readable, bad ones are refused", () => {
  const plain = report("cp-1", []);
  assert.equal("bgp" in plain, false);
  assert.deepEqual(decodeHostReport(encodeHostReport(plain)), plain);
  const withBgp = {
    ...plain,
    bgp: [{ peer: "tor-a", established: true, routes: ["10.0.20.100/32", "10.244.1.0/24"] }],
  };
  assert.deepEqual(decodeHostReport(encodeHostReport(withBgp)), withBgp);
  const cases: [string, unknown][] = [
    ["peer name", [{ peer: "tor a}", established: true, routes: [] }]],
    ["not a prefix", [{ peer: "tor-a", established: true, routes: ["10.0.0.1"] }]],
    ["non-canonical", [{ peer: "tor-a", established: true, routes: ["010.0.0.1/32"] }]],
    ["length", [{ peer: "tor-a", established: true, routes: ["10.0.0.1/33"] }]],
    ["state", [{ peer: "tor-a", established: "yes", routes: [] }]],
    ["unknown field", [{ peer: "tor-a", established: true, routes: [], asn: 1 }]],
  ];
  for (const [what, bgp] of cases) {
    assert.ok("error" in decodeHostReport(JSON.stringify({ ...plain, bgp })), what);
  }
});

Deno.test("decodeHostReport(): reload.restart round-trips, is optional (older hosts) and refuses what a terminal should not print", () => {
  const plain = report("cp-1", []);
  assert.equal("restart" in plain.reload, false);
  assert.deepEqual(decodeHostReport(encodeHostReport(plain)), plain);
  const pending = { ...plain, reload: { ...plain.reload, restart: ["[bgp] socket"] } };
  assert.deepEqual(decodeHostReport(encodeHostReport(pending)), pending);
  const cases: [string, unknown][] = [
    ["control characters", ["[bgp] socket\x1b[2J"]],
    ["a newline", ["[bgp]\nsocket"]],
    ["too long", ["x".repeat(81)]],
    ["empty name", [""]],
    ["empty list", []],
    ["too many", Array.from({ length: 65 }, (_, i) => `s${i}`)],
    ["not a list", "[bgp] socket"],
  ];
  for (const [what, restart] of cases) {
    const value = { ...plain, reload: { ...plain.reload, restart } };
    assert.ok("error" in decodeHostReport(JSON.stringify(value)), what);
  }
});

Deno.test("decodeHostReport() gives each text its own result, however many texts it has seen", () => {
  const texts = Array.from(
    { length: 200 },
    (_, i) => encodeHostReport(report("cp-1", [`10.0.0.${i + 1}`])),
  );
  for (let round = 0; round < 2; round++) {
    texts.forEach((text, i) => {
      const decoded = decodeHostReport(text);
      assert.ok(!("error" in decoded), `text ${i}`);
      assert.deepEqual(decoded.vips.map((v) => v.ip), [`10.0.0.${i + 1}`]);
    });
  }
  // a text seen before and a refused one: the same answer again
  assert.deepEqual(decodeHostReport(texts[3]!), decodeHostReport(texts[3]!));
  assert.deepEqual(decodeHostReport("{"), { error: "not JSON" });
  assert.deepEqual(decodeHostReport("{"), { error: "not JSON" });
});
