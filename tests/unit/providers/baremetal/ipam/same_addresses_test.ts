import assert from "node:assert/strict";
import { sameAddresses } from "../../../../../providers/baremetal/ipam/same_addresses.ts";

Deno.test("sameAddresses() compares address lists in any order, counting repeats", () => {
  const cases: [a: string[], b: string[], same: boolean][] = [
    [[], [], true],
    [["10.0.0.1"], ["10.0.0.1"], true],
    [["10.0.0.1", "2001:db8::1"], ["2001:db8::1", "10.0.0.1"], true],
    [["10.0.0.1"], [], false],
    [["10.0.0.1"], ["10.0.0.2"], false],
    [["10.0.0.1", "10.0.0.1"], ["10.0.0.1", "10.0.0.2"], false],
    [["10.0.0.1", "10.0.0.2"], ["10.0.0.1"], false],
    // "a,b" joined would equal "a" + "b" joined differently; element-wise comparison does not
    [["10.0.0.1,10.0.0.2"], ["10.0.0.1", "10.0.0.2"], false],
  ];
  for (const [a, b, same] of cases) {
    assert.equal(sameAddresses(a, b), same, `${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
    assert.equal(sameAddresses(b, a), same, "symmetric");
  }
});
