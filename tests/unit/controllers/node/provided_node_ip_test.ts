import assert from "node:assert/strict";
import {
  filterAddressesByNodeIp,
  parseProvidedNodeIp,
} from "../../../../src/controllers/node/provided_node_ip.ts";

const cloud = [
  { type: "InternalIP", address: "10.0.0.11" },
  { type: "InternalIP", address: "10.0.0.12" },
  { type: "InternalIP", address: "fd00::11" },
  { type: "ExternalIP", address: "203.0.113.11" },
  { type: "Hostname", address: "cp-1" },
];

Deno.test("parseProvidedNodeIp accepts one IP and a dual-stack pair, canonicalized", () => {
  assert.deepEqual(parseProvidedNodeIp("10.0.0.11"), ["10.0.0.11"]);
  assert.deepEqual(parseProvidedNodeIp("10.0.0.11,FD00:0::11"), ["10.0.0.11", "fd00::11"]);
});

Deno.test("parseProvidedNodeIp rejects same-family pairs, unspecified, junk and three entries", () => {
  assert.throws(() => parseProvidedNodeIp("10.0.0.1,10.0.0.2"), /one IPv4 and one IPv6/);
  assert.throws(() => parseProvidedNodeIp("0.0.0.0"), /unspecified/);
  assert.throws(() => parseProvidedNodeIp("::"), /unspecified/);
  assert.throws(() => parseProvidedNodeIp("node-1"), /"node-1" is not an IP/);
  assert.throws(() => parseProvidedNodeIp("10.0.0.1,fd00::1,10.0.0.2"), /at most two/);
});

Deno.test("filterAddressesByNodeIp puts the match first and drops other addresses of its type", () => {
  assert.deepEqual(filterAddressesByNodeIp(cloud, ["10.0.0.12"]), [
    { type: "InternalIP", address: "10.0.0.12" },
    { type: "ExternalIP", address: "203.0.113.11" },
    { type: "Hostname", address: "cp-1" },
  ]);
});

Deno.test("filterAddressesByNodeIp keeps both families for a dual-stack pair, in annotation order", () => {
  assert.deepEqual(filterAddressesByNodeIp(cloud, ["fd00::11", "10.0.0.11"]), [
    { type: "InternalIP", address: "fd00::11" },
    { type: "InternalIP", address: "10.0.0.11" },
    { type: "ExternalIP", address: "203.0.113.11" },
    { type: "Hostname", address: "cp-1" },
  ]);
});

Deno.test("filterAddressesByNodeIp matches any type, e.g. an ExternalIP", () => {
  assert.deepEqual(filterAddressesByNodeIp(cloud, ["203.0.113.11"]).map((a) => a.address), [
    "203.0.113.11",
    "10.0.0.11",
    "10.0.0.12",
    "fd00::11",
    "cp-1",
  ]);
});

Deno.test("filterAddressesByNodeIp throws naming the IP when the cloud has no such address", () => {
  assert.throws(() => filterAddressesByNodeIp(cloud, ["10.9.9.9"]), /10\.9\.9\.9/);
});
