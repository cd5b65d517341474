import assert from "node:assert/strict";
import {
  decodeJudgement,
  type Judgement,
  judgementFor,
  judgementOf,
  MAX_JUDGED_HOSTS,
  trustJudgement,
} from "../../../src/status/leader_judgement.ts";
import { buildClusterStatus } from "../../../src/status/cluster_status.ts";
import { formatStatusText } from "../../../src/status/format_status.ts";
import { observeHeartbeats } from "../../../src/status/heartbeats.ts";
import { heartbeatLease, lbService, leaderLease, manualObserver, NOW, report } from "./_leases.ts";
import type { V1Lease } from "@kubernetes/client-node";

function withRv(lease: V1Lease, rv: string): V1Lease {
  return { ...lease, metadata: { ...lease.metadata, resourceVersion: rv } };
}

function publication(judgement: Judgement | string): V1Lease {
  return {
    metadata: {
      name: "keelson-status",
      namespace: "kube-system",
      annotations: {
        "keelson.io/heartbeat-judgement": typeof judgement === "string"
          ? judgement
          : JSON.stringify(judgement),
      },
    },
  };
}

Deno.test("judgementOf(): the leader's observation of each heartbeat and the superseded claims, round-tripped strictly", () => {
  // the leader watched: cp-1 renewed 1 s ago; cp-2 took the VIP after cp-1's last renewal
  const { observer, advance } = manualObserver(0);
  const at = (vips1: string[], vips2: string[], rv: string) => [
    withRv(heartbeatLease("cp-1", report("cp-1", vips1), 0), `1${rv}`),
    withRv(heartbeatLease("cp-2", report("cp-2", vips2), -Number(rv)), `2${rv}`),
  ];
  observeHeartbeats(at(["10.0.0.150"], [], "1"), observer, true);
  advance(1000);
  observeHeartbeats(
    [
      withRv(heartbeatLease("cp-1", report("cp-1", ["10.0.0.150"]), -5), "15"),
      withRv(heartbeatLease("cp-2", report("cp-2", []), -5), "25"),
    ],
    observer,
    true,
  );
  advance(500);
  const leases = [
    withRv(heartbeatLease("cp-1", report("cp-1", ["10.0.0.150"]), -5), "15"),
    withRv(heartbeatLease("cp-2", report("cp-2", ["10.0.0.150"]), -9), "29"),
  ];
  const judged = observeHeartbeats(leases, observer, true);
  advance(200);
  const judgement = judgementOf(observeHeartbeats(leases, observer, true), "cp-1_x", 7);
  assert.deepEqual(judgement, {
    v: 1,
    leader: "cp-1_x",
    seq: 7,
    hosts: [
      { host: "cp-1", freshness: "fresh", age_ms: 700, seen: true, rv: "15" },
      { host: "cp-2", freshness: "fresh", age_ms: 200, seen: true, rv: "29" },
    ],
    superseded: [{ vip: "10.0.0.150", hosts: ["cp-1"] }],
  });
  assert.equal(judged.length, 2);
  assert.deepEqual(decodeJudgement(JSON.stringify(judgement)), judgement);
  // strict: unknown fields, a negative age, a control character, too many hosts
  for (
    const bad of [
      { ...judgement, extra: 1 },
      { ...judgement, hosts: [{ ...judgement.hosts[0]!, age_ms: -1 }] },
      { ...judgement, leader: "cp-1\x1b[2J" },
      {
        ...judgement,
        hosts: Array.from({ length: MAX_JUDGED_HOSTS + 1 }, () => judgement.hosts[0]!),
      },
    ]
  ) assert.ok("error" in decodeJudgement(JSON.stringify(bad)));
  assert.ok("error" in decodeJudgement("x".repeat(64 * 1024 + 1)));
});

Deno.test("trustJudgement(): only the leader Lease's holder's publication, and only once seen to change", () => {
  const j = (leader: string, seq: number): Judgement => ({
    v: 1,
    leader,
    seq,
    hosts: [],
    superseded: [],
  });
  assert.equal(judgementFor(publication(j("cp-1_x", 1)), "cp-2_y"), undefined, "not the holder");
  assert.equal(judgementFor(publication("{"), "cp-1_x"), undefined, "unreadable");
  assert.equal(judgementFor(publication(j("cp-1_x", 1)), undefined), undefined, "no holder");
  const a = judgementFor(publication(j("cp-1_x", 1)), "cp-1_x");
  assert.ok(a);
  assert.equal(trustJudgement(a, a), false, "unchanged: the leader may be dead");
  assert.equal(trustJudgement(a, j("cp-1_x", 2)), true);
  assert.equal(trustJudgement(a, j("cp-2_y", 2)), false, "another leader");
  assert.equal(trustJudgement(undefined, j("cp-1_x", 2)), false);
});

Deno.test("buildClusterStatus(): from one read and the leader's trusted judgement, every host is judged at once", () => {
  const leases = [
    withRv(heartbeatLease("cp-1", report("cp-1", ["10.0.0.150"]), 1000), "11"),
    withRv(heartbeatLease("cp-2", report("cp-2", []), 1000), "21"),
    withRv(heartbeatLease("cp-3", report("cp-3", []), 60_000), "31"),
  ];
  const input = {
    services: [lbService("shop", "web", ["10.0.0.150"])],
    leases,
    leaderLease: leaderLease("cp-1_x"),
    nowMs: NOW,
  };
  // a reader that just started: by its own eyes nobody is judged yet
  const alone = buildClusterStatus({ ...input, observer: manualObserver(0).observer });
  assert.ok(alone.hosts.every((h) => h.freshness === "unobserved"));
  assert.equal(alone.judgedBy.by, "reader");
  const judgement: Judgement = {
    v: 1,
    leader: "cp-1_x",
    seq: 42,
    hosts: [
      { host: "cp-1", freshness: "fresh", age_ms: 900, seen: true, rv: "11" },
      // cp-2 renewed after the judgement (another resourceVersion): fresh within its bound
      { host: "cp-2", freshness: "fresh", age_ms: 1900, seen: true, rv: "20" },
      { host: "cp-3", freshness: "silent", age_ms: 58_000, seen: true, rv: "31" },
    ],
    superseded: [],
  };
  const status = buildClusterStatus({
    ...input,
    observer: manualObserver(0).observer,
    leaderJudgement: { judgement, sinceMs: 300 },
  });
  assert.deepEqual(status.judgedBy, { by: "leader", seq: 42, ageMs: 300 });
  assert.match(
    formatStatusText(status, { color: false }),
    /^Leader: cp-1_x \(heartbeats as the leader judges them, 300ms ago\)$/m,
  );
  assert.deepEqual(status.hosts.map((h) => [h.host, h.freshness, h.ageMs]), [
    ["cp-1", "fresh", 1200],
    ["cp-2", "fresh", 300],
    ["cp-3", "silent", 58_300],
  ]);
  assert.equal(status.leader.freshness, "fresh");
  assert.deepEqual(status.vips[0]?.hosts, ["cp-1"]);
  assert.deepEqual(status.problems.map((p) => p.slice(0, 19)), ["host cp-3 is silent"]);
  // a fresh host the leader last saw 14.9 s before is silent by the time this reader uses it
  const aged = buildClusterStatus({
    ...input,
    observer: manualObserver(0).observer,
    leaderJudgement: {
      judgement: { ...judgement, hosts: [{ ...judgement.hosts[0]!, age_ms: 14_900 }] },
      sinceMs: 300,
    },
  });
  assert.equal(aged.hosts[0]?.freshness, "silent");
});

Deno.test("buildClusterStatus(): a claim the leader holds superseded does not count as serving", () => {
  const leases = [
    withRv(heartbeatLease("cp-1", report("cp-1", ["10.0.0.150"])), "11"),
    withRv(heartbeatLease("cp-2", report("cp-2", ["10.0.0.150"])), "21"),
  ];
  const fresh = (host: string, rv: string) => ({
    host,
    freshness: "fresh" as const,
    age_ms: 100,
    seen: true,
    rv,
  });
  const status = buildClusterStatus({
    services: [lbService("shop", "web", ["10.0.0.150"])],
    leases,
    leaderLease: leaderLease("cp-1_x"),
    nowMs: NOW,
    observer: manualObserver(0).observer,
    leaderJudgement: {
      judgement: {
        v: 1,
        leader: "cp-1_x",
        seq: 1,
        hosts: [fresh("cp-1", "11"), fresh("cp-2", "21")],
        superseded: [{ vip: "10.0.0.150", hosts: ["cp-1"] }],
      },
      sinceMs: 200,
    },
  });
  assert.deepEqual([status.vips[0]?.hosts, status.vips[0]?.superseded], [["cp-2"], ["cp-1"]]);
  assert.deepEqual(status.problems, []);
});

Deno.test("buildClusterStatus(): without --config, the leader's serving hosts must each have reported, and its control-plane VIPs need no Service", () => {
  const judgement: Judgement = {
    v: 1,
    leader: "cp-1_x",
    seq: 3,
    hosts: [{ host: "cp-1", freshness: "fresh", age_ms: 100, seen: true, rv: "11" }],
    "control_plane": ["cp-1", "cp-2"],
    // served with no Service (here by keepalived, but over BGP alike): no address without one
    "control_plane_vips": ["10.0.0.5"],
    superseded: [],
  };
  assert.deepEqual(decodeJudgement(JSON.stringify(judgement)), judgement);
  const status = buildClusterStatus({
    services: [],
    leases: [withRv(heartbeatLease("cp-1", report("cp-1", ["10.0.0.5"])), "11")],
    leaderLease: leaderLease("cp-1_x"),
    nowMs: NOW,
    observer: manualObserver(0).observer,
    leaderJudgement: { judgement, sinceMs: 100 },
  });
  assert.deepEqual(status.problems, [
    "serving host cp-2 has never reported (no heartbeat Lease)",
  ]);
});
