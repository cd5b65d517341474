import assert from "node:assert/strict";
import {
  ReloadDeletionGuard,
  removedFractionBlock,
} from "../../../../src/controllers/node_lifecycle/deletion_guards.ts";
import { testConfig } from "../../_fakes/test_inventory.ts";

const five = testConfig({ machines: ["a", "b", "c", "d", "e"].map((name) => ({ name })) });

Deno.test("removedFractionBlock allows removing up to max_removed_fraction and blocks beyond", () => {
  const four = testConfig({ machines: ["a", "b", "c", "d"].map((name) => ({ name })) });
  assert.equal(removedFractionBlock(five, four), undefined);
  const one = testConfig({ machines: [{ name: "a" }] });
  assert.match(removedFractionBlock(five, one) ?? "", /removed 4 of 5 machines \(80%/);
  assert.equal(removedFractionBlock(undefined, one), undefined);
});

Deno.test("ReloadDeletionGuard blocks after a truncating reload until the machine set changes again", () => {
  const guard = new ReloadDeletionGuard();
  guard.onConfig(five);
  assert.equal(guard.deletionsAllowed().ok, true);
  guard.onConfig(testConfig({ machines: [{ name: "a" }] }));
  assert.equal(guard.deletionsAllowed().ok, false);
  guard.onConfig(testConfig({ machines: [{ name: "a" }] }));
  assert.equal(guard.deletionsAllowed().ok, false, "re-saving the same file keeps the block");
  guard.onConfig(testConfig({ machines: [{ name: "a" }, { name: "b" }] }));
  assert.equal(guard.deletionsAllowed().ok, true);
});
