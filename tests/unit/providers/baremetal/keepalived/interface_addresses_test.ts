import assert from "node:assert/strict";
import { parseIpAddrJson } from "../../../../../providers/baremetal/keepalived/interface_addresses.ts";

Deno.test("parseIpAddrJson() returns the canonical addresses of `ip -j addr show dev X`", () => {
  const text = JSON.stringify([{
    ifindex: 2,
    ifname: "eth0",
    flags: ["UP"],
    addr_info: [
      { family: "inet", local: "10.0.0.11", prefixlen: 24 },
      { family: "inet", local: "10.0.0.100", prefixlen: 32 },
      { family: "inet6", local: "FD00:0:0::1", prefixlen: 128 },
      { family: "inet6", local: "fe80::1", prefixlen: 64 },
      { family: "inet", local: "10.0.0.100", prefixlen: 32 },
      {},
    ],
  }]);
  assert.deepEqual(parseIpAddrJson(text), ["10.0.0.100", "10.0.0.11", "fd00::1", "fe80::1"]);
  assert.deepEqual(parseIpAddrJson("[]"), []);
});

Deno.test("parseIpAddrJson() refuses text that is not ip's JSON", () => {
  assert.throws(() => parseIpAddrJson("Device does not exist"), /not JSON/);
  assert.throws(() => parseIpAddrJson('{"addr_info": []}'), /unexpected shape/);
  assert.throws(() => parseIpAddrJson('[{"addr_info": "x"}]'), /unexpected shape/);
  // a value that is not an address is ignored, never passed on
  assert.deepEqual(parseIpAddrJson('[{"addr_info": [{"local": "10.0.0.1; rm"}]}]'), []);
});
