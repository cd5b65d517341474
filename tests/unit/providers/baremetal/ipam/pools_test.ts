import assert from "node:assert/strict";
import {
  addressStanding,
  buildPool,
  poolAllowsNamespace,
} from "../../../../../providers/baremetal/ipam/pools.ts";
import { parseIp } from "../../../../../src/net/ip.ts";
import { configWith, pools } from "./_helpers.ts";

function standing(poolIndex: number, text: string, built = sample()): string {
  const ip = parseIp(text)!;
  return addressStanding(built[poolIndex]!, ip.family, ip.value);
}

function sample() {
  return pools(
    {
      name: "z",
      addresses: ["10.0.0.0/24", "10.0.1.0/31", "10.0.2.0-10.0.2.9"],
      reserved: ["10.0.2.3-10.0.2.4", "10.0.0.7"],
    },
    { name: "a", addresses: ["2001:db8::/120"], namespaces: ["team"], auto_assign: false },
  );
}

Deno.test("buildPools() sorts by name and computes usable addresses and capacity per family", () => {
  const [a, z] = sample();
  assert.equal(a!.name, "a");
  assert.equal(a!.autoAssign, false);
  // the /120 without its subnet-router anycast address
  assert.deepEqual(a!.capacity, { 4: 0n, 6: 255n });
  assert.equal(z!.name, "z");
  // 254 hosts of the /24 minus .7, both of the /31, ten of the range minus two reserved
  assert.deepEqual(z!.capacity, { 4: 253n + 2n + 8n, 6: 0n });
  assert.deepEqual(z!.usable[4].slice(0, 2), [
    { first: parseIp("10.0.0.1")!.value, last: parseIp("10.0.0.6")!.value },
    { first: parseIp("10.0.0.8")!.value, last: parseIp("10.0.0.254")!.value },
  ]);
});

Deno.test("addressStanding() tells usable, outside, reserved, network and broadcast apart", () => {
  assert.equal(standing(1, "10.0.0.1"), "usable");
  assert.equal(standing(1, "10.0.0.0"), "network");
  assert.equal(standing(1, "10.0.0.255"), "broadcast");
  assert.equal(standing(1, "10.0.0.7"), "reserved");
  assert.equal(standing(1, "10.0.2.4"), "reserved");
  assert.equal(standing(1, "10.0.1.0"), "usable");
  assert.equal(standing(1, "10.0.1.1"), "usable");
  assert.equal(standing(1, "10.0.3.1"), "outside");
  assert.equal(standing(1, "2001:db8::1"), "outside");
  assert.equal(standing(0, "2001:db8::"), "network");
  assert.equal(standing(0, "2001:db8::1"), "usable");
});

Deno.test("poolAllowsNamespace() allows every namespace when the list is empty", () => {
  const [a, z] = sample();
  assert.equal(poolAllowsNamespace(a!, "team"), true);
  assert.equal(poolAllowsNamespace(a!, "other"), false);
  assert.equal(poolAllowsNamespace(z!, "anything"), true);
});

Deno.test("buildPool() skips entries that do not parse and says which", () => {
  const pool = buildPool({
    ...configWith([{ name: "p", addresses: ["10.0.0.1"] }]).pools[0]!,
    addresses: ["10.0.0.1", "nope"],
  });
  assert.deepEqual(pool.capacity, { 4: 1n, 6: 0n });
  assert.deepEqual(pool.problems, [
    'Cannot read pool "p" address "nope": "nope" is not an IP address, CIDR or range',
  ]);
});
