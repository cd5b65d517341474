import assert from "node:assert/strict";
import { countsReady, readyCondition } from "../../../src/kube/node_ready.ts";

const node = (conditions: unknown) => ({ metadata: { name: "w-1" }, status: { conditions } });

Deno.test("readyCondition() reads the Ready condition, and nothing from shapes the API never sends", () => {
  assert.equal(readyCondition(node([{ type: "Ready", status: "True" }])), "True");
  assert.equal(
    readyCondition(node([{ type: "Other" }, { type: "Ready", status: "False" }])),
    "False",
  );
  assert.equal(readyCondition(node([{ type: "Ready", status: "Unknown" }])), "Unknown");
  assert.equal(readyCondition(node([{ type: "Ready", status: 7 }])), "Unknown");
  assert.equal(readyCondition(node([])), undefined);
  for (
    const hostile of [undefined, null, "x", [], { status: null }, node("nope"), node({ 0: 1 })]
  ) {
    assert.equal(readyCondition(hostile), undefined, JSON.stringify(hostile));
  }
});

Deno.test("countsReady(): only a present Ready condition that is not True says no", () => {
  assert.equal(countsReady(undefined), true);
  assert.equal(countsReady(node([])), true);
  assert.equal(countsReady(node("not a list")), true);
  assert.equal(countsReady(node([{ type: "Ready", status: "True" }])), true);
  assert.equal(countsReady(node([{ type: "Ready", status: "False" }])), false);
  assert.equal(countsReady(node([{ type: "Ready", status: "Unknown" }])), false);
});
