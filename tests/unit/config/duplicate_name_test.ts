import assert from "node:assert/strict";
import { duplicateName } from "../../../src/config/_duplicate_name.ts";

Deno.test("duplicateName reports each repeat on the later entry, naming the first", () => {
  const seen = new Map<string, number>();
  const at = (name: string, i: number) => duplicateName(seen, ["bgp", "peers"], "peer", name, i);
  assert.equal(at("a", 0), undefined);
  assert.equal(at("b", 1), undefined);
  assert.deepEqual(at("a", 2), {
    earlier: 0,
    issue: {
      path: ["bgp", "peers", 2, "name"],
      message: 'duplicate peer name "a": bgp.peers[0] has it too',
    },
  });
  // a third "a" still names the first one
  assert.equal(at("a", 3)?.earlier, 0);
});
