import assert from "node:assert/strict";
import { servingNote } from "../../../../providers/baremetal/serving_note.ts";
import { parseConfig } from "../../../../src/config/parse_config.ts";

const INVENTORY = `
[keepalived]
interface = "eth0"

[[pools]]
name = "edge"
addresses = ["192.0.2.0/29"]
[pools.served_by]
roles = ["worker"]

[[pools]]
name = "lan"
addresses = ["192.0.2.8/29"]

[[pools]]
name = "anycast"
addresses = ["192.0.2.16/29"]
announce = "bgp"
[pools.served_by]
machines = ["w-1"]

[bgp]
asn = 64513
[[bgp.peers]]
name = "tor"
address = "10.0.0.1"
asn = 64512

[[machines]]
name = "cp-1"
role = "control-plane"
internal_ips = ["10.0.0.11"]

[[machines]]
name = "w-1"
internal_ips = ["10.0.0.21"]

[[machines]]
name = "w-2"
internal_ips = ["10.0.0.22"]

[[machines]]
name = "w-3"
state = "retired"
internal_ips = ["10.0.0.23"]
`;

const config = parseConfig(INVENTORY, "keelson.toml");

Deno.test("servingNote() names the pools a host serves over its announcer, with the other servers", () => {
  assert.equal(
    servingNote(config, "w-1", "vrrp"),
    'Host "w-1" serves VRRP pool "edge" (with "w-2")',
  );
  assert.equal(servingNote(config, "w-1", "bgp"), 'Host "w-1" serves BGP pool "anycast" (alone)');
  assert.equal(servingNote(config, "cp-1", "vrrp"), 'Host "cp-1" serves VRRP pool "lan" (alone)');
});

Deno.test("servingNote() says why a host serves nothing: not selected or retired, or no pool of the kind", () => {
  assert.match(servingNote(config, "cp-1", "bgp"), /serves no BGP pool \(no pool's served_by/);
  assert.match(servingNote(config, "w-3", "vrrp"), /serves no VRRP pool \(.*or it is retired\)/);
  const vrrpOnly = parseConfig('[[machines]]\nname = "w-1"\n', "keelson.toml");
  assert.match(
    servingNote(vrrpOnly, "w-1", "bgp"),
    /serves no BGP pool \(the inventory has none\)/,
  );
});

Deno.test("servingNote() escapes a host name from the command line", () => {
  assert.ok(!servingNote(config, "w-1\u001b[2J", "vrrp").includes("\u001b"));
});
