/**
 * The two-witness rule for a power loss of a Node still Ready: the BMC's confirmed Off and the
 * kubelet's Lease gone silent by this reader's clock, each able to veto alone.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import type { PowerObservation } from "../../../../src/cloud/provider.ts";
import {
  judgePowerLoss,
  type KubeletLeaseView,
  leaseSilenceBoundMs,
  type PowerLossPolicy,
} from "../../../../src/controllers/out_of_service/decide_power_loss.ts";

const NOW = 1_800_000_000_000;
const POLICY: PowerLossPolicy = { confirmOffMs: 5_000, leaseSilenceMs: 15_000 };

/** Off for `forMs`, last answered now. */
function off(forMs: number, answeredAgoMs = 0): PowerObservation {
  return {
    state: "off",
    sinceMs: NOW - forMs,
    answeredAtMs: NOW - answeredAgoMs,
    detail: 'PowerState "Off"',
  };
}

/** A kubelet whose last renewal this reader saw `changedAgoMs` ago; another renewed 1 s ago. */
function lease(changedAgoMs: number | undefined, over: Partial<KubeletLeaseView> = {}) {
  return { changedAgoMs, leaseDurationSeconds: 40, otherChangedAgoMs: 1_000, ...over };
}

const why = (v: ReturnType<typeof judgePowerLoss>) => v.witnessed ? "witnessed" : v.why;

Deno.test("judgePowerLoss: Off confirmed, the Lease silent for the bound since before the first Off, the watch live: witnessed", () => {
  const verdict = judgePowerLoss(off(8_000), lease(16_000), NOW, POLICY);
  assert.deepEqual(verdict, { witnessed: true, silentForMs: 16_000, boundMs: 15_000 });
});

Deno.test("judgePowerLoss: each witness alone vetoes, and so does saying nothing", () => {
  const cases: [string, PowerObservation, KubeletLeaseView | undefined, RegExp][] = [
    ["the kubelet renewing", off(8_000), lease(3_000), /renewed its Lease after|renewing/],
    ["power on", { ...off(8_000), state: "on" }, lease(16_000), /does not say off/],
    ["power unknown", { ...off(8_000), state: "unknown" }, lease(16_000), /does not say off/],
    ["Off never answered", { ...off(8_000), answeredAtMs: undefined }, lease(16_000), /off/],
    ["one Off answer only", off(8_000, 8_000), lease(16_000), /not confirmed/],
    ["Off for less than confirm_off_for", off(4_000), lease(16_000), /not confirmed/],
    ["no Lease", off(8_000), undefined, /no kubelet Lease/],
    ["a Lease never seen changing", off(8_000), lease(undefined), /not seen the kubelet renew/],
    [
      "no duration",
      off(8_000),
      lease(16_000, { leaseDurationSeconds: undefined }),
      /leaseDurationSeconds/,
    ],
    ["duration 0", off(8_000), lease(16_000, { leaseDurationSeconds: 0 }), /leaseDurationSeconds/],
    [
      "duration 1e9",
      off(8_000),
      lease(16_000, { leaseDurationSeconds: 1e9 }),
      /leaseDurationSeconds/,
    ],
    ["silent 14.9 s", off(8_000), lease(14_900), /renewing/],
    ["renewed after the first Off", off(20_000), lease(16_000), /after the power first/],
    ["no other renewal seen", off(8_000), lease(16_000, { otherChangedAgoMs: undefined }), /watch/],
    ["the watch quiet 11 s", off(8_000), lease(30_000, { otherChangedAgoMs: 11_000 }), /watch/],
    // the other renewal came before this one was due (a watch stalled just after both)
    ["other renewed too early", off(8_000), lease(16_000, { otherChangedAgoMs: 7_000 }), /watch/],
    ["the witness off", off(8_000), lease(16_000), /off/],
  ];
  for (const [what, power, view, expected] of cases) {
    const policy = what === "the witness off" ? { ...POLICY, leaseSilenceMs: 0 } : POLICY;
    const verdict = judgePowerLoss(power, view, NOW, policy);
    assert.equal(verdict.witnessed, false, what);
    assert.match(why(verdict), expected, what);
  }
});

Deno.test("judgePowerLoss: the bound is at least 1.2 renewal intervals of the Lease's own duration", () => {
  assert.equal(leaseSilenceBoundMs(15_000, 40), 15_000);
  assert.equal(leaseSilenceBoundMs(10_000, 40), 12_000);
  assert.equal(leaseSilenceBoundMs(15_000, 120), 36_000);
  // a kubelet with --node-lease-duration-seconds=120 renews every 30 s: 20 s of silence is normal
  const slow = lease(35_000, { leaseDurationSeconds: 120, otherChangedAgoMs: 1_000 });
  assert.match(why(judgePowerLoss(off(8_000), slow, NOW, POLICY)), /renewing/);
  const gone = lease(37_000, { leaseDurationSeconds: 120, otherChangedAgoMs: 1_000 });
  assert.equal(judgePowerLoss(off(8_000), gone, NOW, POLICY).witnessed, true);
});

Deno.test("judgePowerLoss: while a period runs it says when to look again", () => {
  const renewing = judgePowerLoss(off(8_000), lease(10_000), NOW, POLICY);
  assert.deepEqual(renewing, {
    witnessed: false,
    why: "the kubelet Lease is renewing",
    recheckAfterMs: 5_000,
  });
});

/** Mostly the values a cluster sees (so both sides of the rule are reached), sometimes wild. */
const ms = (typical: number, wild: number) =>
  fc.oneof(
    { weight: 4, arbitrary: fc.integer({ min: 0, max: typical }) },
    { weight: 1, arbitrary: fc.integer({ min: -wild, max: wild }) },
  );
const arbitraryPower = fc.record({
  state: fc.constantFrom("off", "off", "on", "unknown") as fc.Arbitrary<PowerObservation["state"]>,
  forMs: ms(60_000, 3_600_000),
  answeredAgoMs: fc.option(ms(10_000, 3_600_000), { nil: undefined, freq: 8 }),
});
const arbitraryLease = fc.option(
  fc.record({
    changedAgoMs: fc.option(ms(120_000, 3_600_000), { nil: undefined, freq: 8 }),
    leaseDurationSeconds: fc.option(
      fc.oneof(
        { weight: 4, arbitrary: fc.constantFrom(40, 20, 60, 120) },
        { weight: 1, arbitrary: fc.integer({ min: -5, max: 4000 }) },
        { weight: 1, arbitrary: fc.double({ noNaN: false }) },
      ),
      { nil: undefined, freq: 8 },
    ),
    otherChangedAgoMs: fc.option(ms(30_000, 3_600_000), { nil: undefined, freq: 8 }),
  }),
  { nil: undefined, freq: 8 },
);
const arbitraryPolicy = fc.record({
  confirmOffMs: fc.integer({ min: 1_000, max: 20_000 }),
  leaseSilenceMs: fc.oneof(fc.constant(0), fc.integer({ min: 12_000, max: 60_000 })),
});

function observation(
  p: { state: PowerObservation["state"]; forMs: number; answeredAgoMs?: number },
) {
  return {
    state: p.state,
    sinceMs: NOW - p.forMs,
    ...(p.answeredAgoMs === undefined ? {} : { answeredAtMs: NOW - p.answeredAgoMs }),
    detail: "generated",
  };
}

Deno.test("judgePowerLoss (property): never witnessed while either witness says alive or says nothing", () => {
  let witnessed = 0;
  fc.assert(
    fc.property(arbitraryPower, arbitraryLease, arbitraryPolicy, (p, view, policy) => {
      const power = observation(p);
      const verdict = judgePowerLoss(power, view, NOW, policy);
      if (!verdict.witnessed) return;
      witnessed++;
      // the BMC: Off, answered, two answers at least confirm_off_for apart
      assert.equal(power.state, "off");
      assert.ok(power.answeredAtMs !== undefined);
      assert.ok(power.answeredAtMs - power.sinceMs >= policy.confirmOffMs);
      // the kubelet: seen renewing, then silent for the bound, since before the first Off
      assert.ok(view?.changedAgoMs !== undefined);
      const duration = view.leaseDurationSeconds!;
      assert.ok(Number.isInteger(duration) && duration >= 1 && duration <= 3600);
      assert.ok(policy.leaseSilenceMs > 0);
      assert.ok(view.changedAgoMs >= policy.leaseSilenceMs);
      assert.ok(view.changedAgoMs >= duration * 1000 * 0.25 * 1.2);
      assert.ok(view.changedAgoMs > p.forMs);
      // the watch delivered another kubelet's renewal after this one was due, and lately
      assert.ok(view.otherChangedAgoMs !== undefined);
      assert.ok(view.otherChangedAgoMs <= duration * 250);
      assert.ok(view.otherChangedAgoMs <= view.changedAgoMs - duration * 250);
    }),
    { numRuns: 20_000 },
  );
  // the generators reach the witnessed side too, so the checks above ran
  assert.ok(witnessed > 20, `only ${witnessed} witnessed cases generated`);
});

Deno.test("judgePowerLoss (property): a kubelet renewing within its bound is never declared lost, whatever the BMC says", () => {
  fc.assert(
    fc.property(
      arbitraryPower,
      fc.integer({ min: 1, max: 3600 }),
      fc.integer({ min: 0, max: 600_000 }),
      arbitraryPolicy,
      (p, duration, other, policy) => {
        const bound = leaseSilenceBoundMs(policy.leaseSilenceMs, duration);
        for (const changedAgoMs of [0, Math.floor(bound / 2), Math.max(0, bound - 1)]) {
          const view = { changedAgoMs, leaseDurationSeconds: duration, otherChangedAgoMs: other };
          assert.equal(judgePowerLoss(observation(p), view, NOW, policy).witnessed, false);
        }
      },
    ),
    { numRuns: 2_000 },
  );
});
