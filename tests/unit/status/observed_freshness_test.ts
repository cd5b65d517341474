import assert from "node:assert/strict";
import { leaseRecordKey, RecordObserver } from "../../../src/status/observed_freshness.ts";
import { leaderLease } from "./_leases.ts";

function clock() {
  let t = 100;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
}

Deno.test("RecordObserver: a record first read is unobserved until it changes (fresh) or outlasts its duration unchanged (silent)", () => {
  const c = clock();
  const o = new RecordObserver(c.now);
  o.see("k", [{ id: "a", key: "1" }, { id: "b", key: "1" }], true);
  assert.deepEqual(o.judge("k", "a", 15_000), {
    freshness: "unobserved",
    ageMs: 0,
    changeSeen: false,
    changedAtMs: undefined,
    memberSince: new Map(),
  });
  c.advance(4000);
  o.see("k", [{ id: "a", key: "2" }, { id: "b", key: "1" }], true);
  assert.deepEqual(
    [o.judge("k", "a", 15_000).freshness, o.judge("k", "a", 15_000).ageMs],
    ["fresh", 0],
  );
  c.advance(11_001);
  // b: unchanged for longer than its duration since first read
  assert.deepEqual(
    [o.judge("k", "b", 15_000).freshness, o.judge("k", "b", 15_000).ageMs],
    ["silent", 15_001],
  );
  assert.equal(o.judge("k", "a", 15_000).freshness, "fresh");
  c.advance(4000);
  assert.deepEqual(
    [o.judge("k", "a", 15_000).freshness, o.judge("k", "a", 15_000).changeSeen],
    ["silent", true],
  );
  assert.equal(o.watchedMs("k"), 19_001);
  assert.equal(o.watchedMs("other"), 0);
});

Deno.test("RecordObserver: a record appearing after the first complete read was written while watching; one gone is forgotten", () => {
  const c = clock();
  const o = new RecordObserver(c.now);
  // reads before the first complete one set no baseline
  o.see("k", [{ id: "a", key: "1" }], false);
  o.see("k", [{ id: "a", key: "1" }], true);
  assert.equal(o.judge("k", "a", 15_000).freshness, "unobserved");
  c.advance(1000);
  o.see("k", [{ id: "a", key: "1" }, { id: "c", key: "1" }], true);
  assert.equal(o.judge("k", "c", 15_000).freshness, "fresh");
  o.see("k", [{ id: "c", key: "1" }], true);
  assert.equal(o.judge("k", "a", 15_000).freshness, "unobserved"); // never seen: unknown
  assert.equal(o.judge("k", "a", 15_000).ageMs, 0);
  // kinds are apart: a complete read of one forgets nothing of another
  o.see("other", [], true);
  assert.equal(o.judge("k", "c", 15_000).freshness, "fresh");
});

Deno.test("RecordObserver: members appearing while watching are dated; those listed from the start are not", () => {
  const c = clock();
  const o = new RecordObserver(c.now);
  o.see("k", [{ id: "a", key: "1", members: ["x"] }], true);
  c.advance(500);
  o.see("k", [{ id: "a", key: "2", members: ["x", "y"] }], true);
  c.advance(500);
  o.see("k", [{ id: "a", key: "3", members: ["x", "y"] }], true);
  const judged = o.judge("k", "a", 15_000);
  assert.deepEqual([...judged.memberSince], [["y", 600]]);
  assert.equal(judged.changedAtMs, 1100);
});

Deno.test("leaseRecordKey(): changes with the renewal, not with the object's other fields", () => {
  const a = leaderLease("x", 1000);
  const b = { ...leaderLease("x", 1000), metadata: { name: "keelson", resourceVersion: "9" } };
  assert.equal(leaseRecordKey(a), leaseRecordKey(b));
  assert.notEqual(leaseRecordKey(a), leaseRecordKey(leaderLease("x", 999)));
});
