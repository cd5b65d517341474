import assert from "node:assert/strict";
import { parseConfig } from "../../../src/config/parse_config.ts";
import { summarizeConfig } from "../../../src/config/summary.ts";

Deno.test("summarizeConfig() describes the example inventory in one paragraph", async () => {
  const text = await Deno.readTextFile(
    new URL("../../../deploy/examples/keelson.toml", import.meta.url),
  );
  const summary = summarizeConfig(parseConfig(text, "keelson.toml"));
  assert.ok(!summary.includes("\n"));
  for (
    const part of [
      'Cluster "dc1-prod" (provider "baremetal")',
      "9 machines: 3 control-plane (3 active), " +
      "6 worker (3 active, 1 maintenance, 1 shutdown, 1 retired)",
      "2 zones: dc1-row-a (5), dc1-row-b (4)",
      '"public" 63 IPv4 usable (served by "cp-1" "cp-2" "cp-3"), ' +
      '"public-bgp" 30 IPv4 usable (BGP, served by "cp-1" "cp-2" "cp-3"), ' +
      '"internal-v6" 255 IPv6 usable (served by "cp-1" "cp-2" "cp-3")',
      "BGP as AS 64513 to 2 peers",
      "control-plane VIP 10.0.0.10 and 2001:db8:0:1::10",
      'controllers "*"',
    ]
  ) assert.ok(summary.includes(part), `missing "${part}" in: ${summary}`);
});

Deno.test("summarizeConfig() says what is absent in a minimal config", () => {
  const summary = summarizeConfig(parseConfig('[[machines]]\nname = "w-1"\n', "keelson.toml"));
  assert.match(
    summary,
    /1 machine: 1 worker \(1 active\); no zones; no pools; no control-plane VIP/,
  );
});

Deno.test("summarizeConfig() counts the machines with a BMC and says what [power] turns on", () => {
  assert.match(
    summarizeConfig(parseConfig('[[machines]]\nname = "w-1"\n', "keelson.toml")),
    /; no BMC, out-of-service off;/,
  );
  // one BMC each: two machines may not share one BMC's system
  const bmc = (name: string, address: string) =>
    `[[machines]]\nname = "${name}"\n[machines.bmc]\nendpoint = "https://${address}"\n` +
    `username_file = "/etc/keelson/bmc/u"\npassword_file = "/etc/keelson/bmc/p"\n` +
    `ca_file = "/etc/keelson/bmc/ca.pem"\n`;
  const summary = summarizeConfig(parseConfig(
    `[power]\nout_of_service = true\nfencing = "on"\n${bmc("w-1", "10.0.9.17")}${
      bmc("w-2", "10.0.9.18")
    }` +
      '[[machines]]\nname = "w-3"\n',
    "keelson.toml",
  ));
  assert.match(summary, /; BMC on 2 of 3 machines, out-of-service on \(fencing on\);/);
});

Deno.test("summarizeConfig() names each pool's serving machines: served_by, retired left out", () => {
  let ip = 10;
  const machine = (name: string, role: string, extra = "") =>
    `[[machines]]\nname = "${name}"\nrole = "${role}"\ninternal_ips = ["10.0.0.${ip++}"]\n${extra}`;
  const text = '[[pools]]\nname = "edge"\naddresses = ["192.0.2.0/29"]\n' +
    '[pools.served_by]\nroles = ["worker"]\n' +
    '[[pools]]\nname = "cp"\naddresses = ["192.0.2.8/29"]\n' +
    machine("cp-1", "control-plane") + machine("w-1", "worker") + machine("w-2", "worker") +
    machine("w-3", "worker", 'state = "retired"\n');
  const summary = summarizeConfig(parseConfig(text, "keelson.toml"));
  assert.match(summary, /"edge" 6 IPv4 usable \(served by "w-1" "w-2"\)/);
  assert.match(summary, /"cp" 6 IPv4 usable \(served by "cp-1"\)/);
});

Deno.test("summarizeConfig() says when no control-plane machine is active to serve the control-plane VIP", () => {
  const inventory = (states: string[]) =>
    '[control_plane]\nvip = ["10.0.0.10"]\n' +
    states.map((state, i) =>
      `[[machines]]\nname = "cp-${i + 1}"\nrole = "control-plane"\nstate = "${state}"\n` +
      `internal_ips = ["10.0.0.${11 + i}"]\n`
    ).join("");
  const held = summarizeConfig(
    parseConfig(inventory(["maintenance", "shutdown", "retired"]), "keelson.toml"),
  );
  assert.match(
    held,
    /control-plane VIP 10\.0\.0\.10 \(port 6443\), served by no machine \(no control-plane machine is active\);/,
  );
  const served = summarizeConfig(
    parseConfig(inventory(["maintenance", "active", "retired"]), "keelson.toml"),
  );
  assert.match(served, /control-plane VIP 10\.0\.0\.10 \(port 6443\);/);
});
