import assert from "node:assert/strict";
import type { V1Lease } from "@kubernetes/client-node";
import type { LeaseApi } from "../../../src/kube/lease_api.ts";
import { KubeApiError } from "../../../src/kube/ports.ts";
import { publishJudgement } from "../../../src/agent/judgement_publisher.ts";
import { decodeJudgement, type Judgement } from "../../../src/status/leader_judgement.ts";
import { observeHeartbeats } from "../../../src/status/heartbeats.ts";
import { RecordObserver } from "../../../src/status/observed_freshness.ts";
import { heartbeatLease, report } from "../status/_leases.ts";
import { pollUntil } from "../../_support/poll.ts";

/** Leases in memory with resourceVersion checks; one foreign write to race the first replace. */
class MemoryLeases implements LeaseApi {
  store = new Map<string, V1Lease>();
  #rv = 0;
  raceOnce = true;
  read(namespace: string, name: string) {
    return Promise.resolve(structuredClone(this.store.get(`${namespace}/${name}`)));
  }
  create(lease: V1Lease) {
    const key = `${lease.metadata!.namespace}/${lease.metadata!.name}`;
    if (this.store.has(key)) {
      return Promise.reject(new KubeApiError("exists", { code: 409, reason: "AlreadyExists" }));
    }
    return Promise.resolve(this.#put(key, lease));
  }
  replace(lease: V1Lease) {
    const key = `${lease.metadata!.namespace}/${lease.metadata!.name}`;
    if (this.raceOnce) {
      // a former leader's last write lands first
      this.raceOnce = false;
      this.#put(key, this.store.get(key)!);
    }
    if (this.store.get(key)?.metadata?.resourceVersion !== lease.metadata?.resourceVersion) {
      return Promise.reject(new KubeApiError("conflict", { code: 409, reason: "Conflict" }));
    }
    return Promise.resolve(this.#put(key, lease));
  }
  #put(key: string, lease: V1Lease): V1Lease {
    const stored = structuredClone(lease);
    stored.metadata = { ...stored.metadata, resourceVersion: String(++this.#rv) };
    this.store.set(key, stored);
    return structuredClone(stored);
  }
}

Deno.test("publishJudgement(): the leader's judgement on its own Lease, a growing sequence, through a conflict", async () => {
  const leases = new MemoryLeases();
  const observer = new RecordObserver();
  const beats = [heartbeatLease("cp-1", report("cp-1", []))];
  const stop = new AbortController();
  const seqs: number[] = [];
  const running = publishJudgement({
    leases,
    namespace: "kube-system",
    name: "keelson-status",
    identity: "cp-1_abc",
    heartbeats: { list: () => observeHeartbeats(beats, observer, true) },
    synced: () => true,
    servingHosts: () => ["cp-1"],
    periodMs: 10,
  }, stop.signal);
  try {
    await pollUntil("three writes", () => {
      const lease = leases.store.get("kube-system/keelson-status");
      const text = lease?.metadata?.annotations?.["keelson.io/heartbeat-judgement"];
      const judgement = text === undefined ? undefined : decodeJudgement(text) as Judgement;
      if (judgement && seqs.at(-1) !== judgement.seq) seqs.push(judgement.seq);
      return seqs.length >= 3 ? lease : undefined;
    }, { timeoutMs: 5_000, intervalMs: 1 });
    const lease = leases.store.get("kube-system/keelson-status")!;
    assert.equal(lease.spec?.holderIdentity, "cp-1_abc");
    const judgement = decodeJudgement(
      lease.metadata!.annotations!["keelson.io/heartbeat-judgement"]!,
    ) as Judgement;
    assert.equal(judgement.leader, "cp-1_abc");
    assert.deepEqual(judgement.control_plane, ["cp-1"]);
    assert.deepEqual(judgement.hosts.map((h) => h.host), ["cp-1"]);
    assert.ok(seqs.every((s, i) => i === 0 || s > seqs[i - 1]!), `growing: ${seqs}`);
  } finally {
    stop.abort();
    await running;
  }
});
