import assert from "node:assert/strict";
import type { V1Node } from "@kubernetes/client-node";
import type { PowerObservation } from "../../../../src/cloud/provider.ts";
import {
  decideOutOfService,
  type GuardContext,
  MISMATCH_GRACE_MS,
  OUT_OF_SERVICE_MARKER,
  OUT_OF_SERVICE_TAINT,
  type OutOfServiceInput,
  type OutOfServicePolicy,
} from "../../../../src/controllers/out_of_service/decide_out_of_service.ts";

const NOW = 1_800_000_000_000;
const POLICY: OutOfServicePolicy = {
  enabled: true,
  confirmOffMs: 10_000,
  fencing: "dry-run",
  fenceAfterMs: 300_000,
};
const FREE: GuardContext = {
  controlPlane: false,
  otherControlPlaneInService: 0,
  self: false,
  taintSlotFree: true,
  fenceSlotFree: true,
};

function node(
  ready: "True" | "False" | "Unknown" | undefined,
  options: { taint?: boolean; marker?: boolean; name?: string } = {},
): V1Node {
  return {
    metadata: {
      name: options.name ?? "w1",
      ...(options.marker
        ? { annotations: { [OUT_OF_SERVICE_MARKER]: "2027-01-15T08:00:00Z" } }
        : {}),
    },
    spec: options.taint ? { taints: [{ ...OUT_OF_SERVICE_TAINT }] } : {},
    status: ready ? { conditions: [{ type: "Ready", status: ready }] } : {},
  };
}

function power(
  state: PowerObservation["state"],
  forMs: number,
  answered = true,
): PowerObservation {
  return {
    state,
    sinceMs: NOW - forMs,
    ...(answered ? { answeredAtMs: NOW } : {}),
    detail: `PowerState "${state === "on" ? "On" : "Off"}"`,
  };
}

function decide(over: Partial<OutOfServiceInput>) {
  return decideOutOfService({
    node: node("Unknown"),
    power: power("off", 60_000),
    nowMs: NOW,
    policy: POLICY,
    notReadySinceMs: NOW - 1000,
    lastFenceMs: undefined,
    guards: FREE,
    ...over,
  });
}

const kinds = (d: ReturnType<typeof decide>) => d.actions.map((a) => a.kind);

Deno.test("decideOutOfService taints a NotReady Node whose power has been off for the confirmation period, saying what was seen", () => {
  for (const ready of ["False", "Unknown", undefined] as const) {
    const d = decide({ node: node(ready) });
    assert.deepEqual(kinds(d), ["taint"], `Ready ${ready}`);
    const message = (d.actions[0] as { message: string }).message;
    assert.match(message, /node\.kubernetes\.io\/out-of-service=nodeshutdown:NoExecute/);
    assert.match(message, /Ready condition (False|Unknown)/);
    assert.match(message, /off since 2027-01-15T07:59:00\.000Z \(60s ago; PowerState "Off"\)/);
  }
});

Deno.test("decideOutOfService waits out the confirmation period and says when to look again", () => {
  const d = decide({ power: power("off", 4_000) });
  assert.deepEqual(kinds(d), []);
  assert.equal(d.recheckAfterMs, 6_000);
  assert.deepEqual(kinds(decide({ power: power("off", 10_000) })), ["taint"]);
});

Deno.test("decideOutOfService: an Off is confirmed by a later answer, never by one answer growing old", () => {
  // one Off answer 60 s ago and nothing since (the BMC went silent without a failure yet)
  const stale = decide({ power: { ...power("off", 60_000), answeredAtMs: NOW - 60_000 } });
  assert.deepEqual(kinds(stale), []);
  assert.equal(stale.recheckAfterMs, 1_000);
  // the next answer, 10 s after the first, still Off: confirmed
  const confirmed = { ...power("off", 60_000), answeredAtMs: NOW - 50_000 };
  assert.deepEqual(kinds(decide({ power: confirmed })), ["taint"]);
});

Deno.test("decideOutOfService: a flapping power state restarts the confirmation (sinceMs reset)", () => {
  // off for 60 s, then on for a moment, then off again 2 s ago: the new episode counts, not the old
  const d = decide({ power: power("off", 2_000) });
  assert.deepEqual(kinds(d), []);
  assert.equal(d.recheckAfterMs, 8_000);
  assert.deepEqual(kinds(decide({ power: power("on", 1_000) })), []);
});

Deno.test("decideOutOfService: unknown power never counts as off, however long", () => {
  assert.deepEqual(kinds(decide({ power: power("unknown", 3_600_000) })), []);
  // "off" without any valid answer behind it is not trusted either
  assert.deepEqual(kinds(decide({ power: power("off", 60_000, false) })), []);
  // a machine without a power controller
  assert.deepEqual(kinds(decide({ power: null })), []);
});

Deno.test("decideOutOfService: power off while the Node is Ready: no taint, a mismatch Warning after the grace", () => {
  const early = decide({ node: node("True"), power: power("off", 30_000) });
  assert.deepEqual(kinds(early), []);
  assert.equal(early.recheckAfterMs, 10_000 + MISMATCH_GRACE_MS - 30_000);
  const late = decide({ node: node("True"), power: power("off", 10_000 + MISMATCH_GRACE_MS) });
  assert.deepEqual(kinds(late), ["mismatch"]);
  assert.match((late.actions[0] as { message: string }).message, /but the node is Ready/);
});

Deno.test("decideOutOfService removes only the taint Keelson marked, once the Node is Ready", () => {
  const own = decide({ node: node("True", { taint: true, marker: true }), power: power("on", 5) });
  assert.deepEqual(kinds(own), ["untaint"]);
  // someone else's taint (no marker) stays, Ready or not
  assert.deepEqual(
    kinds(decide({ node: node("True", { taint: true }), power: power("on", 5) })),
    [],
  );
  // still NotReady with our taint, power back on: the Node has not returned; the taint stays
  assert.deepEqual(
    kinds(decide({ node: node("False", { taint: true, marker: true }), power: power("on", 5) })),
    [],
  );
  // the marker without the taint (removed by hand) is dropped, so a later foreign taint is not
  // ours, and the taint is not added again in that power episode
  assert.deepEqual(kinds(decide({ node: node("False", { marker: true }) })), ["forget-marker"]);
  assert.deepEqual(kinds(decide({ withdrawnInEpisodeMs: NOW - 60_000 })), []);
  assert.deepEqual(kinds(decide({ withdrawnInEpisodeMs: NOW - 90_000 })), ["taint"]);
  // own taints are still removed with the switch off
  assert.deepEqual(
    kinds(decide({
      node: node("True", { taint: true, marker: true }),
      policy: { ...POLICY, enabled: false },
    })),
    ["untaint"],
  );
});

Deno.test("decideOutOfService adds nothing while the switch is off or a taint is already there", () => {
  assert.deepEqual(kinds(decide({ policy: { ...POLICY, enabled: false } })), []);
  assert.deepEqual(kinds(decide({ node: node("False", { taint: true }) })), []);
});

Deno.test("decideOutOfService guards: a rejected reload, the last control-plane hosts, this host, the rate limit", () => {
  const held = decide({ guards: { ...FREE, held: "the inventory failed validation" } });
  assert.deepEqual(held.actions, [{
    kind: "taint-held",
    reason: "blocked",
    message: held.actions[0]!.kind === "taint-held" ? held.actions[0]!.message : "",
  }]);
  assert.match((held.actions[0] as { message: string }).message, /failed validation/);

  const lastCp = decide({ guards: { ...FREE, controlPlane: true, otherControlPlaneInService: 0 } });
  assert.deepEqual(kinds(lastCp), ["taint-held"]);
  assert.match((lastCp.actions[0] as { message: string }).message, /control-plane/);
  const cpWithPeer = decide({
    guards: { ...FREE, controlPlane: true, otherControlPlaneInService: 1 },
  });
  assert.deepEqual(kinds(cpWithPeer), ["taint"]);

  const self = decide({ guards: { ...FREE, self: true } });
  assert.deepEqual(kinds(self), ["taint-held"]);
  assert.match((self.actions[0] as { message: string }).message, /host this Keelson runs on/);

  const limited = decide({ guards: { ...FREE, taintSlotFree: false } });
  assert.equal(limited.actions[0]?.kind, "taint-held");
  assert.equal((limited.actions[0] as { reason: string }).reason, "rate_limited");
});

Deno.test("decideOutOfService fences a Node NotReady for fence_after whose power still says on; dry run by default", () => {
  const notYet = decide({ power: power("on", 600_000), notReadySinceMs: NOW - 100_000 });
  assert.deepEqual(kinds(notYet), []);
  assert.equal(notYet.recheckAfterMs, 200_000);

  const due = decide({ power: power("on", 600_000), notReadySinceMs: NOW - 300_000 });
  assert.deepEqual(due.actions.map((a) => a.kind === "fence" && a.dryRun), [true]);
  assert.match((due.actions[0] as { message: string }).message, /Would force .*dry-run/);

  const on = decide({
    power: power("on", 600_000),
    notReadySinceMs: NOW - 300_000,
    policy: { ...POLICY, fencing: "on" },
  });
  assert.deepEqual(on.actions.map((a) => a.kind === "fence" && !a.dryRun), [true]);

  // once per fence_after: a fence 1 minute ago waits 4 more
  const again = decide({
    power: power("on", 600_000),
    notReadySinceMs: NOW - 900_000,
    lastFenceMs: NOW - 60_000,
  });
  assert.deepEqual(kinds(again), []);
  assert.equal(again.recheckAfterMs, 240_000);
});

Deno.test("decideOutOfService never fences on unknown power, with fencing off, this host, or past the guards", () => {
  const base = { notReadySinceMs: NOW - 900_000, policy: { ...POLICY, fencing: "on" as const } };
  assert.deepEqual(kinds(decide({ ...base, power: power("unknown", 900_000) })), []);
  assert.deepEqual(
    kinds(decide({ ...base, power: power("on", 900_000), policy: { ...POLICY, fencing: "off" } })),
    [],
  );
  assert.deepEqual(
    kinds(
      decide({ ...base, power: power("on", 900_000), policy: { ...base.policy, enabled: false } }),
    ),
    [],
  );
  const self = decide({ ...base, power: power("on", 900_000), guards: { ...FREE, self: true } });
  assert.deepEqual(kinds(self), ["fence-held"]);
  assert.match((self.actions[0] as { message: string }).message, /host this Keelson runs on/);
  const cp = decide({
    ...base,
    power: power("on", 900_000),
    guards: { ...FREE, controlPlane: true },
  });
  assert.deepEqual(kinds(cp), ["fence-held"]);
  const limited = decide({
    ...base,
    power: power("on", 900_000),
    guards: { ...FREE, fenceSlotFree: false },
  });
  assert.equal((limited.actions[0] as { reason: string }).reason, "rate_limited");
  // a Ready Node is never fenced
  assert.deepEqual(kinds(decide({ ...base, node: node("True"), power: power("on", 900_000) })), []);
});

/** A kubelet Lease last seen renewing `changedAgoMs` ago; another kubelet renewed 1 s ago. */
function kubeletLease(changedAgoMs: number | undefined) {
  return { changedAgoMs, leaseDurationSeconds: 40, otherChangedAgoMs: 1_000 };
}

const WITNESS_POLICY: OutOfServicePolicy = { ...POLICY, leaseSilenceMs: 15_000 };

Deno.test("decideOutOfService marks a Ready Node NotReady when its power is confirmed off and its kubelet Lease silent since before the Off", () => {
  const d = decide({
    node: node("True"),
    power: power("off", 12_000),
    policy: WITNESS_POLICY,
    kubeletLease: kubeletLease(16_000),
    notReadySinceMs: undefined,
  });
  assert.deepEqual(kinds(d), ["mark-not-ready"]);
  const message = (d.actions[0] as { message: string }).message;
  assert.match(message, /Set node w1's Ready condition to Unknown/);
  assert.match(message, /not renewed Lease kube-node-lease\/w1 for 16s .*bound 15s/);
  assert.match(message, /off since 2027-01-15T07:59:48\.000Z/);
});

Deno.test("decideOutOfService leaves a Ready Node alone while either witness says it runs, or a guard holds", () => {
  const ready = {
    node: node("True"),
    power: power("off", 12_000),
    policy: WITNESS_POLICY,
    kubeletLease: kubeletLease(16_000),
    notReadySinceMs: undefined,
  };
  const cases: [string, Partial<OutOfServiceInput>][] = [
    ["the kubelet renewing", { kubeletLease: kubeletLease(5_000) }],
    ["renewed after the first Off", { kubeletLease: kubeletLease(11_000) }],
    ["no Lease seen", { kubeletLease: undefined }],
    ["a Lease never seen changing", { kubeletLease: kubeletLease(undefined) }],
    ["power on", { power: power("on", 60_000) }],
    ["power unknown", { power: power("unknown", 60_000) }],
    ["off not confirmed", { power: power("off", 9_000) }],
    ["no power controller", { power: null }],
    ["the witness off", { policy: { ...POLICY, leaseSilenceMs: 0 } }],
    ["the witness not configured", { policy: POLICY }],
    ["the switch off", { policy: { ...WITNESS_POLICY, enabled: false } }],
    ["this host", { guards: { ...FREE, self: true } }],
    ["held", { guards: { ...FREE, held: "a reload was rejected" } }],
    ["rate limited", { guards: { ...FREE, taintSlotFree: false } }],
    ["the last control-plane host", { guards: { ...FREE, controlPlane: true } }],
    ["someone's taint already", { node: node("True", { taint: true }) }],
    ["withdrawn in this episode", { withdrawnInEpisodeMs: NOW - 12_000 }],
  ];
  for (const [what, over] of cases) {
    const d = decide({ ...ready, ...over });
    assert.ok(!kinds(d).includes("mark-not-ready"), `${what}: ${kinds(d)}`);
    assert.ok(!kinds(d).includes("taint"), `${what}: ${kinds(d)}`);
  }
});

Deno.test("decideOutOfService does not taint a NotReady Node whose kubelet the Lease shows running, and says why once", () => {
  for (
    const [what, lease, words, recheck] of [
      // the bound is 1.2 renewals of a 40 s Lease: 12 s, 9 s from now
      ["renewing", kubeletLease(3_000), /renewed its Lease 3s ago \(kube-node-lease\/w1/, 9_000],
      [
        "renewed after the first Off",
        kubeletLease(40_000),
        /after the power first answered off/,
        undefined,
      ],
    ] as const
  ) {
    const d = decide({ node: node("False"), power: power("off", 60_000), kubeletLease: lease });
    assert.deepEqual(kinds(d), ["taint-held"], what);
    // a renewal within the bound holds the taint only until the bound has passed
    assert.equal(d.recheckAfterMs, recheck, what);
    const action = d.actions[0] as { reason: string; message: string };
    assert.equal(action.reason, "blocked");
    assert.match(action.message, words, what);
    assert.match(action.message, /the machine is running/);
  }
  // silent since before the Off: the NotReady path taints as before
  const d = decide({
    node: node("False"),
    power: power("off", 60_000),
    kubeletLease: kubeletLease(61_000),
  });
  assert.deepEqual(kinds(d), ["taint"]);
  // a renewal the watch delivered just after the first Off answer is no contradiction
  const late = decide({
    node: node("Unknown"),
    power: power("off", 60_000),
    kubeletLease: kubeletLease(59_000),
  });
  assert.deepEqual(kinds(late), ["taint"]);
});
