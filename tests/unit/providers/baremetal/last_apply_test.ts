import assert from "node:assert/strict";
import { rememberLastApply } from "../../../../providers/baremetal/last_apply.ts";

Deno.test("rememberLastApply: 'none' before any apply, then the outcome of the last apply that answered", async () => {
  const outcomes = ["applied", "not_running"] as const;
  const applied: string[] = [];
  let i = 0;
  const applier = rememberLastApply({
    apply(text: string) {
      applied.push(text);
      if (text === "broken") return Promise.reject(new Error("cannot write"));
      return Promise.resolve({ result: outcomes[i++]!, detail: text });
    },
  });
  assert.equal(applier.last(), "none");
  assert.deepEqual(await applier.apply("a"), { result: "applied", detail: "a" });
  assert.equal(applier.last(), "applied");
  await assert.rejects(() => applier.apply("broken"), /cannot write/);
  assert.equal(applier.last(), "applied", "a failed apply leaves the last answer");
  await applier.apply("b");
  assert.equal(applier.last(), "not_running");
  assert.deepEqual(applied, ["a", "broken", "b"]);
});
