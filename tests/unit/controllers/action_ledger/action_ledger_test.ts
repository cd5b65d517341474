import assert from "node:assert/strict";
import {
  ActionLedger,
  ActionLedgerError,
} from "../../../../src/controllers/action_ledger/action_ledger.ts";
import {
  ACTION_LEDGER_ANNOTATION,
  MAX_STORED_ACTIONS,
  parseLedger,
} from "../../../../src/controllers/action_ledger/ledger_record.ts";
import {
  LedgerSightings,
  observingLeases,
} from "../../../../src/controllers/action_ledger/ledger_sightings.ts";
import {
  firstTermLedger,
  holdLease,
  LEDGER_LEASE,
  type MemoryLeases,
  termLedger,
} from "../../_fakes/memory_leases.ts";

const T0 = 1_800_000_000_000;
const WINDOW = 60_000;

function record(leases: MemoryLeases) {
  const text = leases.get(LEDGER_LEASE.namespace, LEDGER_LEASE.name)?.metadata?.annotations?.[
    ACTION_LEDGER_ANNOTATION
  ];
  const parsed = text === undefined ? undefined : parseLedger(text);
  assert.ok(parsed?.ok, `a readable record: ${text}`);
  return parsed.ledger;
}

/** The next term: `holder` takes the Lease over (its annotations stay) and reads the record. */
function takeOver(leases: MemoryLeases, holder: string, now: () => number): ActionLedger {
  holdLease(leases, holder, 1);
  return termLedger(leases, holder, now);
}

Deno.test("ActionLedger: the Lease's first term starts empty and writes the record at once", async () => {
  let now = T0;
  const { leases, ledger } = firstTermLedger(() => now);
  await ledger.open();
  assert.deepEqual(ledger.slot("taint", now, 2, WINDOW), { free: true, counted: 0 });
  assert.deepEqual(record(leases), { taint: [], fence: [], delete: [] });
  now += 1_000;
  assert.equal((await ledger.claim("taint", "w-1", now, 2, WINDOW)).claimed, true);
  assert.deepEqual(record(leases).taint, [
    { target: "w-1", at: new Date(now).toISOString(), count: 1 },
  ]);
});

Deno.test("ActionLedger: a new term counts the last term's actions for a full window from its own start", async () => {
  let now = T0;
  const { leases, ledger } = firstTermLedger(() => now);
  assert.equal((await ledger.claim("taint", "w-1", now, 2, WINDOW)).claimed, true);
  assert.equal((await ledger.claim("taint", "w-2", now, 2, WINDOW)).claimed, true);
  assert.equal((await ledger.claim("taint", "w-3", now, 2, WINDOW)).claimed, false);
  now += 9_000; // the leader is gone; the next one starts 9 s later
  const next = takeOver(leases, "host-b_2", () => now);
  await next.open();
  assert.equal(next.slot("taint", now, 2, WINDOW).free, false);
  assert.equal((await next.claim("taint", "w-3", now, 2, WINDOW)).claimed, false);
  // its own clock: one window from when it first saw them, not from when they were written
  now += WINDOW - 1;
  assert.equal((await next.claim("taint", "w-3", now, 2, WINDOW)).claimed, false);
  now += 1;
  assert.equal((await next.claim("taint", "w-3", now, 2, WINDOW)).claimed, true);
  // the other kinds have their own limits
  assert.equal(next.slot("fence", now, 2, WINDOW).free, true);
});

Deno.test("ActionLedger: stored times from a writer's clock ahead or behind neither extend nor erase the limit", async () => {
  for (const skewMs of [-3_600_000, 3_600_000]) {
    const writer = T0 + skewMs;
    const { leases, ledger } = firstTermLedger(() => writer);
    assert.equal((await ledger.claim("fence", "w-1", writer, 1, WINDOW)).claimed, true);
    let now = T0 + 1_000;
    const next = takeOver(leases, "host-b_2", () => now);
    await next.open();
    assert.equal(next.slot("fence", now, 1, WINDOW).free, false, `skew ${skewMs}: still counted`);
    now += WINDOW;
    assert.equal(next.slot("fence", now, 1, WINDOW).free, true, `skew ${skewMs}: one window`);
  }
});

Deno.test("ActionLedger: a crash between the record and the action costs the slot, never adds one", async () => {
  let now = T0;
  const { leases, ledger } = firstTermLedger(() => now);
  // recorded, then the process died before it deleted the Node
  assert.equal((await ledger.claim("delete", "old-1", now, 1, WINDOW)).claimed, true);
  now += 2_000;
  const next = takeOver(leases, "host-b_2", () => now);
  assert.equal((await next.claim("delete", "old-1", now, 1, WINDOW)).claimed, false);
});

Deno.test("ActionLedger: a Lease with earlier holders but no record (an older Keelson) takes every slot for one window", async () => {
  let now = T0;
  const { leases } = firstTermLedger(() => now);
  const next = takeOver(leases, "host-b_2", () => now);
  await next.open();
  assert.equal(next.slot("taint", now, 1000, WINDOW).free, false);
  // written so: a crash now leaves the next term the same verdict
  assert.equal(record(leases).taint[0]?.count, Infinity);
  now += WINDOW;
  assert.equal((await next.claim("taint", "w-1", now, 1000, WINDOW)).claimed, true);
  // once that window has passed the record holds what this term did, and the next counts it
  const again = takeOver(leases, "host-c_3", () => now);
  await again.open();
  assert.equal(again.slot("taint", now, 1000, WINDOW).counted, 1);
});

Deno.test("ActionLedger: an unreadable record takes every slot for one window and is rewritten", async () => {
  let now = T0;
  const { leases } = firstTermLedger(() => now);
  const lease = leases.get(LEDGER_LEASE.namespace, LEDGER_LEASE.name)!;
  lease.metadata!.annotations = { [ACTION_LEDGER_ANNOTATION]: '{"v":1,"taint":"lots"}' };
  leases.put(lease);
  const next = takeOver(leases, "host-b_2", () => now);
  await next.open();
  assert.equal(next.slot("delete", now, 5, WINDOW).free, false);
  assert.equal(record(leases).delete[0]?.count, Infinity);
  // changed into garbage during the term: again every slot taken for one window
  now += WINDOW;
  assert.equal((await next.claim("delete", "a", now, 5, WINDOW)).claimed, true);
  const broken = leases.get(LEDGER_LEASE.namespace, LEDGER_LEASE.name)!;
  broken.metadata!.annotations = { [ACTION_LEDGER_ANNOTATION]: "garbage" };
  leases.put(broken);
  assert.equal((await next.claim("delete", "b", now, 5, WINDOW)).claimed, false);
  assert.equal(record(leases).delete.some((a) => a.count === Infinity), true);
});

Deno.test("ActionLedger: a process that no longer holds the Lease records nothing, so takes no action", async () => {
  const now = T0;
  const { leases, ledger } = firstTermLedger(() => now);
  await ledger.open();
  holdLease(leases, "host-b_2", 1);
  await assert.rejects(
    ledger.claim("taint", "w-1", now, 2, WINDOW),
    (error: unknown) =>
      error instanceof ActionLedgerError && /no longer holds lease "kube-system\/keelson"/.test(
        error.message,
      ),
  );
  assert.deepEqual(record(leases).taint, []);
});

Deno.test("ActionLedger: a conflicting write (the elector renewing) is retried from a fresh read", async () => {
  const now = T0;
  const { leases, ledger } = firstTermLedger(() => now);
  await ledger.open();
  const replace = leases.replace.bind(leases);
  let renewals = 0;
  leases.replace = (lease) => {
    if (renewals++ < 2) holdLease(leases, "host-a_1", 0); // a renewal lands first
    return replace(lease);
  };
  assert.equal((await ledger.claim("taint", "w-1", now, 1, WINDOW)).claimed, true);
  assert.equal(record(leases).taint.length, 1);
  assert.equal(ledger.slot("taint", now, 1, WINDOW).free, false);
});

Deno.test("ActionLedger: an unreachable API claims nothing", async () => {
  const now = T0;
  const { leases, ledger } = firstTermLedger(() => now);
  leases.down = true;
  await assert.rejects(ledger.claim("fence", "w-1", now, 2, WINDOW), ActionLedgerError);
  await assert.rejects(ledger.open(), /Cannot read the action record on lease/);
  assert.equal(ledger.slot("fence", now, 2, WINDOW).free, false);
});

Deno.test("ActionLedger.tidy drops actions whose window has passed, so a later term does not count them", async () => {
  let now = T0;
  const { leases, ledger } = firstTermLedger(() => now);
  await ledger.claim("taint", "w-1", now, 2, WINDOW);
  now += 30_000;
  await ledger.claim("taint", "w-2", now, 2, WINDOW);
  const writes = leases.writes;
  await ledger.tidy("taint", WINDOW);
  assert.equal(leases.writes, writes, "nothing expired: no write");
  now += 30_000;
  await ledger.tidy("taint", WINDOW);
  assert.deepEqual(record(leases).taint.map((a) => a.target), ["w-2"]);
  const next = takeOver(leases, "host-b_2", () => now);
  assert.equal((await next.claim("taint", "w-3", now, 2, WINDOW)).claimed, true);
  assert.equal((await next.claim("taint", "w-4", now, 2, WINDOW)).claimed, false);
});

Deno.test("ActionLedger keeps at most MAX_STORED_ACTIONS per kind, folding the oldest without counting fewer", async () => {
  let now = T0;
  const { leases, ledger } = firstTermLedger(() => now);
  const max = MAX_STORED_ACTIONS + 36;
  for (let i = 0; i < max; i++) {
    assert.equal((await ledger.claim("delete", `n-${i}`, now, max, WINDOW)).claimed, true);
    now += 10;
  }
  assert.equal((await ledger.claim("delete", "one-more", now, max, WINDOW)).claimed, false);
  const stored = record(leases).delete;
  assert.equal(stored.length, MAX_STORED_ACTIONS);
  assert.equal(stored.reduce((sum, a) => sum + a.count, 0), max);
  const next = takeOver(leases, "host-b_2", () => now);
  await next.open();
  assert.equal(next.slot("delete", now, max, WINDOW).counted, max);
});

Deno.test("ActionLedger without leader election creates its Lease and starts empty", async () => {
  const { leases } = firstTermLedger(() => T0);
  const alone = new ActionLedger({
    leases,
    namespace: "kube-system",
    name: "keelson-solo",
    now: () => T0,
  });
  assert.equal((await alone.claim("taint", "w-1", T0, 1, WINDOW)).claimed, true);
  const lease = leases.get("kube-system", "keelson-solo");
  assert.match(lease?.metadata?.annotations?.[ACTION_LEDGER_ANNOTATION] ?? "", /"node":"w-1"/);
  const restarted = new ActionLedger({
    leases,
    namespace: "kube-system",
    name: "keelson-solo",
    now: () => T0 + 5_000,
  });
  assert.equal((await restarted.claim("taint", "w-2", T0 + 5_000, 1, WINDOW)).claimed, false);
});

Deno.test("ActionLedger with sightings: a standby that saw the actions written counts them from then, not from its start", async () => {
  let now = T0;
  const { leases, ledger } = firstTermLedger(() => now);
  await ledger.claim("taint", "w-1", now, 2, WINDOW);
  await ledger.claim("taint", "w-2", now, 2, WINDOW);
  // the standby's leader election reads the Lease every retry period
  const sightings = new LedgerSightings(() => now);
  const standbyLeases = observingLeases(leases, sightings);
  now += 2_000;
  await standbyLeases.read(LEDGER_LEASE.namespace, LEDGER_LEASE.name);
  now += 7_000; // the leader is gone; the standby leads
  holdLease(leases, "host-b_2", 1);
  const next = new ActionLedger({
    leases,
    ...LEDGER_LEASE,
    holder: "host-b_2",
    now: () => now,
    sightings,
  });
  await next.open();
  assert.deepEqual(next.slot("taint", now, 2, WINDOW), {
    free: false,
    counted: 2,
    freeAtMs: T0 + 2_000 + WINDOW,
  });
  now = T0 + 2_000 + WINDOW;
  assert.equal((await next.claim("taint", "w-3", now, 2, WINDOW)).claimed, true);
});

Deno.test("LedgerSightings: an action never seen counts from the term's start; gone ones are forgotten", async () => {
  let now = T0;
  const { leases, ledger } = firstTermLedger(() => now);
  const sightings = new LedgerSightings(() => now);
  await ledger.claim("delete", "old-1", now, 5, WINDOW);
  sightings.observe(leases.get(LEDGER_LEASE.namespace, LEDGER_LEASE.name));
  now += 1_000;
  await ledger.claim("delete", "old-2", now, 5, WINDOW);
  now += 30_000;
  const stored = record(leases).delete;
  assert.equal(sightings.firstSeen("delete", stored[0]!), T0);
  assert.equal(sightings.firstSeen("delete", stored[1]!), undefined);
  assert.equal(sightings.firstSeen("taint", stored[0]!), undefined, "per kind");
  holdLease(leases, "host-b_2", 1);
  const next = new ActionLedger({
    leases,
    ...LEDGER_LEASE,
    holder: "host-b_2",
    now: () => now,
    sightings,
  });
  await next.open();
  assert.deepEqual(next.slot("delete", now, 2, WINDOW), {
    free: false,
    counted: 2,
    freeAtMs: T0 + WINDOW,
  });
  now = T0 + WINDOW;
  await next.tidy("delete", WINDOW);
  sightings.observe(leases.get(LEDGER_LEASE.namespace, LEDGER_LEASE.name));
  assert.equal(sightings.firstSeen("delete", stored[0]!), undefined, "tidied away, forgotten");
  // garbage in the Lease changes nothing it knows
  sightings.observe({ metadata: { annotations: { [ACTION_LEDGER_ANNOTATION]: "{" } } });
  assert.equal(next.slot("delete", now, 2, WINDOW).counted, 1);
});
