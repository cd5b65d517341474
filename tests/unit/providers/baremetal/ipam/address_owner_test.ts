import assert from "node:assert/strict";
import { addressOwner } from "../../../../../providers/baremetal/ipam/address_owner.ts";
import { sampleConfig } from "../../../_fakes/test_inventory.ts";
import type { Config } from "../../../../../src/config/types.ts";

function config(): Config {
  const base = sampleConfig();
  return {
    ...base,
    pools: [
      { ...base.pools[0]!, name: "lan", addresses: ["10.0.9.0/29"], reserved: ["10.0.9.3"] },
      {
        ...base.pools[0]!,
        name: "edge",
        addresses: ["198.51.100.0/30", "2001:db8:5::/126"],
        reserved: [],
        announce: "bgp",
      },
    ],
  };
}

Deno.test("addressOwner() names the pool and the announcer of a usable address", () => {
  const c = config();
  assert.deepEqual(addressOwner(c, "10.0.9.1"), { pool: "lan", index: 0, announce: "vrrp" });
  assert.deepEqual(addressOwner(c, "198.51.100.2"), { pool: "edge", index: 1, announce: "bgp" });
  assert.deepEqual(addressOwner(c, "2001:db8:5::1"), { pool: "edge", index: 1, announce: "bgp" });
});

Deno.test("addressOwner() gives no owner to what no pool may hand out", () => {
  const c = config();
  for (const address of ["10.0.9.0", "10.0.9.7", "10.0.9.3", "10.0.10.1", "2001:db8:5::", "x"]) {
    assert.equal(addressOwner(c, address), undefined, address);
  }
  assert.equal(addressOwner(c, " 10.0.9.1"), undefined, "text is read exactly, not trimmed");
});
