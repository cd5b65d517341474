import assert from "node:assert/strict";
import type { V1Lease } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { LeaderElector, type LeaderElectorOptions } from "../../../src/kube/leader_election.ts";
import type { LeaseApi } from "../../../src/kube/lease_api.ts";
import { KubeApiError } from "../../../src/kube/ports.ts";
import type { Clock } from "../../../src/kube/clock.ts";
import { FakeClock } from "../_fakes/fake_clock.ts";
import { turns } from "../../_support/poll.ts";

const NS = "kube-system";
const NAME = "keelson";

/** An in-memory Lease store with the apiserver's optimistic concurrency. */
class MemoryLeaseApi implements LeaseApi {
  #store = new Map<string, V1Lease>();
  #rv = 0;
  /** When set, every call fails like an unreachable server. */
  down = false;
  /** When set, every call hangs forever. */
  hang = false;
  writes = 0;

  #check(): Promise<void> {
    if (this.hang) return new Promise(() => {});
    if (this.down) {
      return Promise.reject(new KubeApiError("Cannot reach the server", { code: 0 }));
    }
    return Promise.resolve();
  }

  // JSON round trip: stored and returned copies carry times as strings, like a real server.
  #copy(lease: V1Lease): V1Lease {
    return JSON.parse(JSON.stringify(lease));
  }

  async read(namespace: string, name: string): Promise<V1Lease | undefined> {
    await this.#check();
    const lease = this.#store.get(`${namespace}/${name}`);
    return lease ? this.#copy(lease) : undefined;
  }

  async create(lease: V1Lease): Promise<V1Lease> {
    await this.#check();
    const key = `${lease.metadata!.namespace}/${lease.metadata!.name}`;
    if (this.#store.has(key)) {
      throw new KubeApiError("already exists", { code: 409, reason: "AlreadyExists" });
    }
    return this.put(lease);
  }

  async replace(lease: V1Lease): Promise<V1Lease> {
    await this.#check();
    const current = this.#store.get(`${lease.metadata!.namespace}/${lease.metadata!.name}`);
    if (!current) throw new KubeApiError("not found", { code: 404, reason: "NotFound" });
    if (current.metadata!.resourceVersion !== lease.metadata?.resourceVersion) {
      throw new KubeApiError("the object has been modified", { code: 409, reason: "Conflict" });
    }
    return this.put(lease);
  }

  /** Stores a Lease unconditionally (also how tests play another writer). */
  put(lease: V1Lease): V1Lease {
    this.writes++;
    const stored = this.#copy(lease);
    stored.metadata = { ...stored.metadata, resourceVersion: String(++this.#rv) };
    this.#store.set(`${stored.metadata.namespace}/${stored.metadata.name}`, stored);
    return this.#copy(stored);
  }

  get(): V1Lease | undefined {
    const lease = this.#store.get(`${NS}/${NAME}`);
    return lease ? this.#copy(lease) : undefined;
  }
}

/** Lets every promise chain that needs no timer settle. */
async function flush(): Promise<void> {
  await turns(3);
}

/** Moves fake time forward in small steps, settling promises after each. */
async function advance(clock: FakeClock, ms: number, step = 100): Promise<void> {
  for (let done = 0; done < ms; done += step) {
    clock.advance(Math.min(step, ms - done));
    await flush();
  }
}

function options(clock: Clock, identity: string, extra: Partial<LeaderElectorOptions> = {}) {
  return {
    namespace: NS,
    name: NAME,
    identity,
    leaseDurationMs: 15_000,
    renewDeadlineMs: 10_000,
    retryPeriodMs: 2_000,
    clock,
    random: () => 0,
    ...extra,
  };
}

/** Starts `run` and records what the callbacks saw. */
function campaign(elector: LeaderElector) {
  const controller = new AbortController();
  const seen = {
    leaderSignal: undefined as AbortSignal | undefined,
    stopped: 0,
    newLeaders: [] as string[],
  };
  const done = elector.run(controller.signal, {
    onStartedLeading(signal) {
      seen.leaderSignal = signal;
    },
    onStoppedLeading() {
      seen.stopped++;
    },
    onNewLeader(identity) {
      seen.newLeaders.push(identity);
    },
  });
  return { controller, seen, done };
}

function foreignLease(clock: Clock, holder: string): V1Lease {
  const now = new Date(clock.now()).toISOString();
  return {
    metadata: { namespace: NS, name: NAME },
    spec: {
      holderIdentity: holder,
      leaseDurationSeconds: 15,
      acquireTime: now as unknown as Date,
      renewTime: now as unknown as Date,
      leaseTransitions: 4,
    },
  };
}

Deno.test("LeaderElector.run() creates an absent lease, renews it and releases it on abort", async () => {
  const clock = new FakeClock();
  const api = new MemoryLeaseApi();
  const registry = new Registry();
  const elector = new LeaderElector(api, options(clock, "a", { registry }));
  const { controller, seen, done } = campaign(elector);
  await flush();

  assert.equal(elector.isLeader(), true);
  assert.ok(seen.leaderSignal && !seen.leaderSignal.aborted);
  assert.deepEqual(seen.newLeaders, ["a"]);
  const created = api.get()!;
  assert.equal(created.spec?.holderIdentity, "a");
  assert.equal(created.spec?.leaseDurationSeconds, 15);
  assert.equal(created.spec?.leaseTransitions, 0);
  // MicroTime: six fractional digits, as kube-apiserver requires.
  assert.match(String(created.spec?.renewTime), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  assert.equal(elector.lastRenewMs(), clock.now());
  assert.match(await registry.metrics(), /leader_election_master_status\{name="keelson"\} 1/);

  await advance(clock, 2_000);
  const renewed = api.get()!;
  assert.equal(Date.parse(String(renewed.spec?.renewTime)), clock.now());
  assert.equal(renewed.spec?.acquireTime, created.spec?.acquireTime);
  assert.equal(elector.lastRenewMs(), clock.now());

  controller.abort();
  await done;
  assert.equal(seen.leaderSignal.aborted, true);
  assert.equal(seen.stopped, 1);
  assert.equal(elector.isLeader(), false);
  const released = api.get()!;
  assert.equal(released.spec?.holderIdentity, "");
  assert.equal(released.spec?.leaseDurationSeconds, 1);
  assert.match(await registry.metrics(), /leader_election_master_status\{name="keelson"\} 0/);
});

Deno.test("LeaderElector.run() waits while another holder's lease is fresh and takes over after expiry", async () => {
  const clock = new FakeClock();
  const api = new MemoryLeaseApi();
  api.put(foreignLease(clock, "dead-leader"));
  const elector = new LeaderElector(api, options(clock, "b"));
  const { controller, seen, done } = campaign(elector);
  await flush();
  assert.equal(elector.isLeader(), false);
  assert.deepEqual(seen.newLeaders, ["dead-leader"]);

  // Expiry counts from when *we* first saw the record, by our clock: 15 s, then the next retry.
  await advance(clock, 14_000);
  assert.equal(elector.isLeader(), false);
  assert.equal(api.get()!.spec?.holderIdentity, "dead-leader");
  await advance(clock, 2_000);
  assert.equal(elector.isLeader(), true);
  const lease = api.get()!;
  assert.equal(lease.spec?.holderIdentity, "b");
  assert.equal(lease.spec?.leaseTransitions, 5);
  assert.deepEqual(seen.newLeaders, ["dead-leader", "b"]);

  controller.abort();
  await done;
});

Deno.test("LeaderElector.run() judges expiry by its own clock, not the remote renewTime", async () => {
  const clock = new FakeClock();
  const api = new MemoryLeaseApi();
  // A renewTime far in the past (a skewed clock elsewhere) does not make the lease look expired.
  const lease = foreignLease(clock, "skewed");
  lease.spec!.renewTime = new Date(clock.now() - 3_600_000).toISOString() as unknown as Date;
  api.put(lease);
  const elector = new LeaderElector(api, options(clock, "b"));
  const { controller, done } = campaign(elector);
  await advance(clock, 8_000);
  assert.equal(elector.isLeader(), false);
  controller.abort();
  await done;
});

Deno.test("LeaderElector.run() of a standby takes over within one retry period of the leader's release", async () => {
  const clock = new FakeClock();
  const api = new MemoryLeaseApi();
  const a = new LeaderElector(api, options(clock, "a"));
  const b = new LeaderElector(api, options(clock, "b"));
  const first = campaign(a);
  await flush();
  const second = campaign(b);
  await advance(clock, 5_000);
  assert.equal(a.isLeader(), true);
  assert.equal(b.isLeader(), false);

  first.controller.abort();
  await first.done;
  assert.equal(api.get()!.spec?.holderIdentity, "");
  await advance(clock, 2_000);
  assert.equal(b.isLeader(), true);
  assert.equal(api.get()!.spec?.holderIdentity, "b");
  assert.equal(api.get()!.spec?.leaseTransitions, 1);
  assert.ok(second.seen.leaderSignal && !second.seen.leaderSignal.aborted);

  second.controller.abort();
  await second.done;
});

Deno.test("LeaderElector.run() aborts leaderSignal when renewals fail for renewDeadline", async () => {
  const clock = new FakeClock();
  const api = new MemoryLeaseApi();
  const registry = new Registry();
  const elector = new LeaderElector(api, options(clock, "a", { registry }));
  const { seen, done } = campaign(elector);
  await flush();
  assert.equal(elector.isLeader(), true);

  api.down = true;
  // The round starts one retry period after the last renewal and lasts renewDeadline.
  await advance(clock, 2_000 + 9_900);
  assert.equal(seen.leaderSignal!.aborted, false);
  assert.equal(elector.isLeader(), true);
  await advance(clock, 200);
  assert.equal(seen.leaderSignal!.aborted, true);
  assert.equal(elector.isLeader(), false);
  await done;
  assert.equal(seen.stopped, 1);
  assert.match(await registry.metrics(), /leader_election_master_status\{name="keelson"\} 0/);
});

Deno.test("LeaderElector.run() gives up a renewal that hangs at renewDeadline", async () => {
  const clock = new FakeClock();
  const api = new MemoryLeaseApi();
  const elector = new LeaderElector(api, options(clock, "a"));
  const { seen, done } = campaign(elector);
  await flush();
  api.hang = true;
  await advance(clock, 2_000 + 9_900);
  assert.equal(seen.leaderSignal!.aborted, false);
  await advance(clock, 200);
  assert.equal(seen.leaderSignal!.aborted, true);
  await done;
});

Deno.test("LeaderElector.run() renews through the slow path after a conflicting write", async () => {
  const clock = new FakeClock();
  const api = new MemoryLeaseApi();
  const registry = new Registry();
  const elector = new LeaderElector(api, options(clock, "a", { registry }));
  const { controller, seen, done } = campaign(elector);
  await flush();

  // Another client touches the Lease (same holder): our cached resourceVersion is now stale.
  const touched = api.get()!;
  touched.metadata!.labels = { touched: "yes" };
  api.put(touched);
  await advance(clock, 2_000);
  assert.equal(elector.isLeader(), true);
  assert.equal(seen.leaderSignal!.aborted, false);
  const lease = api.get()!;
  assert.equal(Date.parse(String(lease.spec?.renewTime)), clock.now());
  assert.equal(lease.metadata?.labels?.touched, "yes");
  assert.match(await registry.metrics(), /leader_election_slowpath_total\{name="keelson"\} 1/);

  controller.abort();
  await done;
});

Deno.test("LeaderElector.run() steps down at once when another holder took the lease", async () => {
  const clock = new FakeClock();
  const api = new MemoryLeaseApi();
  const elector = new LeaderElector(api, options(clock, "a"));
  const { seen, done } = campaign(elector);
  await flush();
  api.put({ ...foreignLease(clock, "intruder"), metadata: api.get()!.metadata });
  await advance(clock, 2_000);
  assert.equal(seen.leaderSignal!.aborted, true);
  await done;
  assert.equal(seen.stopped, 1);
  // Not ours any more, so nothing is released.
  assert.equal(api.get()!.spec?.holderIdentity, "intruder");
});

Deno.test("LeaderElector.run() of two candidates racing for an absent lease makes exactly one leader", async () => {
  const clock = new FakeClock();
  const api = new MemoryLeaseApi();
  const a = new LeaderElector(api, options(clock, "a"));
  const b = new LeaderElector(api, options(clock, "b"));
  const runs = [campaign(a), campaign(b)];
  await advance(clock, 10_000);
  assert.equal([a, b].filter((e) => e.isLeader()).length, 1);
  for (const run of runs) run.controller.abort();
  await Promise.all(runs.map((run) => run.done));
});

Deno.test("LeaderElector.healthCheck() fails only for a leader that stopped renewing for leaseDuration + 20 s", async () => {
  const fake = new FakeClock();
  let skewMs = 0;
  // A wedged loop: time passes but no timer fires.
  const clock: Clock = {
    now: () => fake.now() + skewMs,
    setTimer: (callback, ms) => fake.setTimer(callback, ms),
  };
  const api = new MemoryLeaseApi();
  const standby = new LeaderElector(api, options(clock, "b"));
  assert.deepEqual(standby.healthCheck(), { ok: true });

  const elector = new LeaderElector(api, options(clock, "a"));
  const { controller, done } = campaign(elector);
  await flush();
  skewMs = 35_000;
  assert.deepEqual(elector.healthCheck(), { ok: true });
  skewMs = 35_001;
  const health = elector.healthCheck();
  assert.equal(health.ok, false);
  assert.match(
    health.reason ?? "",
    /failed election to renew leadership on lease kube-system\/keelson/,
  );
  skewMs = 0;
  controller.abort();
  await done;
});

Deno.test("LeaderElector() rejects durations client-go rejects", () => {
  const clock = new FakeClock();
  const api = new MemoryLeaseApi();
  assert.throws(
    () => new LeaderElector(api, options(clock, "a", { renewDeadlineMs: 15_000 })),
    { name: "RangeError", message: /leaseDurationMs must be greater than renewDeadlineMs/ },
  );
  assert.throws(
    () => new LeaderElector(api, options(clock, "a", { renewDeadlineMs: 2_400 })),
    { name: "RangeError", message: /renewDeadlineMs must be greater than retryPeriodMs \* 1\.2/ },
  );
  assert.throws(
    () => new LeaderElector(api, options(clock, "a", { leaseDurationMs: 500 })),
    { name: "RangeError", message: /leaseDurationMs must be at least 1000/ },
  );
  const named = new LeaderElector(api, { ...options(clock, "a"), identity: undefined });
  assert.match(named.identity, /^.+_[0-9a-f-]{36}$/);
});

Deno.test("LeaderElector.run() refuses to run twice at once", async () => {
  const clock = new FakeClock();
  const elector = new LeaderElector(new MemoryLeaseApi(), options(clock, "a"));
  const { controller, done } = campaign(elector);
  await assert.rejects(
    elector.run(new AbortController().signal, {
      onStartedLeading() {},
      onStoppedLeading() {},
    }),
    /twice at once/,
  );
  controller.abort();
  await done;
});
