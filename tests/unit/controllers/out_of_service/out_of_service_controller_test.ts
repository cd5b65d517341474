import assert from "node:assert/strict";
import type { V1Lease, V1Node } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import type {
  PowerChange,
  PowerControl,
  PowerObservation,
} from "../../../../src/cloud/provider.ts";
import { ProviderError } from "../../../../src/cloud/provider.ts";
import {
  OUT_OF_SERVICE_MARKER,
  OUT_OF_SERVICE_TAINT,
} from "../../../../src/controllers/out_of_service/decide_out_of_service.ts";
import {
  OutOfServiceController,
  type OutOfServiceOptions,
  type PowerActionPolicy,
} from "../../../../src/controllers/out_of_service/out_of_service_controller.ts";
import { delay } from "../../../../src/kube/delay.ts";
import { FakeClock } from "../../_fakes/fake_clock.ts";
import { FakeCluster, FakeInformer } from "../../_fakes/fake_cluster.ts";
import { holdsFor, pollUntil } from "../../../_support/poll.ts";
import {
  firstTermLedger,
  holdLease,
  type MemoryLeases,
  termLedger,
} from "../../_fakes/memory_leases.ts";
import type { ActionLedger } from "../../../../src/controllers/action_ledger/action_ledger.ts";
import type { NodePod, NodePods } from "../../../../src/kube/node_pods.ts";
import { KubeApiError } from "../../../../src/kube/ports.ts";

/** A PowerControl whose answers the test sets, as the BMC poller would report them. */
class FakePower implements PowerControl {
  readonly states = new Map<string, PowerObservation | Error>();
  /** @param clock the test's clock: every read is a fresh answer of the same state */
  constructor(private readonly clock?: () => number) {}
  readonly forced: string[] = [];
  forceOffError: Error | undefined;
  readonly #listeners = new Set<(change: PowerChange) => void>();
  onChange(listener: (change: PowerChange) => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }
  powerState(node: V1Node): Promise<PowerObservation | null> {
    const state = this.states.get(node.metadata?.name ?? "");
    if (state instanceof Error) return Promise.reject(state);
    if (state && this.clock && state.answeredAtMs !== undefined) {
      return Promise.resolve({
        ...state,
        answeredAtMs: Math.max(state.answeredAtMs, this.clock()),
      });
    }
    return Promise.resolve(state ?? null);
  }
  forceOff(node: V1Node): Promise<void> {
    this.forced.push(node.metadata?.name ?? "");
    return this.forceOffError ? Promise.reject(this.forceOffError) : Promise.resolve();
  }
  set(name: string, state: PowerObservation["state"], sinceMs: number): void {
    this.states.set(name, {
      state,
      sinceMs,
      answeredAtMs: sinceMs,
      detail: `PowerState "${state === "on" ? "On" : "Off"}"`,
    });
    for (const listener of this.#listeners) {
      listener({ concerns: (node) => node.metadata?.name === name });
    }
  }
}

function node(
  name: string,
  ready: "True" | "False" | "Unknown",
  labels: Record<string, string> = {},
): V1Node {
  return {
    metadata: { name, labels },
    spec: {},
    status: { conditions: [{ type: "Ready", status: ready }] },
  };
}

function setup(options: {
  policy?: Partial<PowerActionPolicy>;
  guard?: { ok: boolean; reason?: string };
  host?: string;
  pods?: NodePods;
} = {}) {
  const cluster = new FakeCluster();
  let now = 1_800_000_000_000;
  const power = new FakePower(() => now);
  const { leases, ledger } = firstTermLedger(() => now);
  const registry = new Registry();
  const controller = new OutOfServiceController({
    nodes: cluster.nodes,
    writer: cluster,
    events: cluster.events,
    power,
    registry,
    ...(options.guard ? { guard: { deletionsAllowed: () => options.guard! } } : {}),
    ...(options.host ? { host: options.host } : {}),
    ...(options.pods ? { pods: options.pods } : {}),
    ledger,
  }, {
    now: () => now,
    policy: () => ({
      enabled: true,
      confirmOffMs: 10_000,
      fencing: "dry-run",
      fenceAfterMs: 300_000,
      maxActionsPerInterval: 2,
      actionIntervalMs: 60_000,
      ...options.policy,
    }),
  });
  const metric = async (line: string): Promise<number> => {
    const text = await registry.metrics();
    const escaped = line.replace(/[{}"]/g, (c) => `\\${c}`);
    return Number(new RegExp(`^${escaped} (\\d+)$`, "m").exec(text)?.[1] ?? "NaN");
  };
  return {
    cluster,
    power,
    controller,
    metric,
    leases,
    now: () => now,
    advance: (ms: number) => (now += ms),
  };
}

const taintsOf = (cluster: FakeCluster, name: string) =>
  (cluster.nodes.get(name)?.spec?.taints ?? []).map((t) => `${t.key}=${t.value}:${t.effect}`);

Deno.test("OutOfServiceController taints a NotReady Node once its power has been off for confirm_off_for, marks it, and counts it", async () => {
  const { cluster, power, controller, metric, now, advance } = setup();
  cluster.addNode(node("w1", "Unknown"));
  power.set("w1", "off", now());
  const first = await controller.sync("w1");
  assert.deepEqual(first, { kind: "requeue", afterMs: 10_050 });
  assert.deepEqual(taintsOf(cluster, "w1"), []);
  advance(10_000);
  assert.deepEqual(await controller.sync("w1"), { kind: "done" });
  assert.deepEqual(taintsOf(cluster, "w1"), [
    "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute",
  ]);
  assert.equal(
    cluster.nodes.get("w1")?.metadata?.annotations?.[OUT_OF_SERVICE_MARKER],
    new Date(now()).toISOString(),
  );
  const [event] = cluster.events.withReason("OutOfServiceTainted");
  assert.equal(event?.type, "Normal");
  assert.match(event?.message ?? "", /Ready condition Unknown; power off since .*PowerState "Off"/);
  assert.equal(await metric("keelson_out_of_service_taints_applied_total"), 1);
  // safe to run again: nothing more is written
  const writes = cluster.writes.length;
  await controller.sync("w1");
  assert.equal(cluster.writes.length, writes);
});

Deno.test("OutOfServiceController removes its own taint and marker when the Node is Ready, never another's", async () => {
  const { cluster, power, controller, metric, now, advance } = setup();
  cluster.addNode(node("w1", "False"));
  cluster.addNode(node("w2", "False"));
  cluster.updateNode("w2", (n) => (n.spec = { taints: [{ ...OUT_OF_SERVICE_TAINT }] }));
  power.set("w1", "off", now());
  power.set("w2", "off", now());
  advance(20_000);
  await controller.sync("w1");
  await controller.sync("w2");
  assert.equal(cluster.events.withReason("OutOfServiceTainted").length, 1);

  for (const name of ["w1", "w2"]) {
    power.set(name, "on", now());
    cluster.updateNode(
      name,
      (n) => (n.status = { conditions: [{ type: "Ready", status: "True" }] }),
    );
    await controller.sync(name);
  }
  assert.deepEqual(taintsOf(cluster, "w1"), []);
  assert.equal(cluster.nodes.get("w1")?.metadata?.annotations?.[OUT_OF_SERVICE_MARKER], undefined);
  assert.deepEqual(taintsOf(cluster, "w2"), [
    "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute",
  ]);
  assert.equal(cluster.events.withReason("OutOfServiceTaintRemoved").length, 1);
  assert.equal(await metric("keelson_out_of_service_taints_removed_total"), 1);
});

Deno.test("OutOfServiceController does not add the taint again in the power episode someone removed it in", async () => {
  const { cluster, power, controller, now, advance } = setup();
  cluster.addNode(node("w1", "False"));
  power.set("w1", "off", now());
  advance(20_000);
  await controller.sync("w1");
  cluster.updateNode("w1", (n) => (n.spec = { taints: [] }));
  await controller.sync("w1");
  await controller.sync("w1");
  assert.deepEqual(taintsOf(cluster, "w1"), []);
  assert.equal(cluster.nodes.get("w1")?.metadata?.annotations?.[OUT_OF_SERVICE_MARKER], undefined);
  // a new power-off episode is judged afresh
  power.set("w1", "off", now());
  advance(10_000);
  await controller.sync("w1");
  assert.equal(taintsOf(cluster, "w1").length, 1);
});

Deno.test("OutOfServiceController caps taints per interval and says so once per Node and episode", async () => {
  const { cluster, power, controller, metric, now, advance } = setup({
    policy: { maxActionsPerInterval: 1 },
  });
  for (const name of ["w1", "w2"]) {
    cluster.addNode(node(name, "False"));
    power.set(name, "off", now());
  }
  advance(10_000);
  for (let i = 0; i < 3; i++) {
    await controller.sync("w1");
    await controller.sync("w2");
  }
  assert.equal(taintsOf(cluster, "w1").length, 1);
  assert.equal(taintsOf(cluster, "w2").length, 0);
  assert.equal(cluster.events.withReason("OutOfServiceRateLimited").length, 1);
  assert.equal(await metric('keelson_out_of_service_taints_held_total{reason="rate_limited"}'), 1);
  advance(60_000);
  await controller.sync("w2");
  assert.equal(taintsOf(cluster, "w2").length, 1);
});

Deno.test("OutOfServiceController holds every action while a config reload is rejected", async () => {
  const { cluster, power, controller, metric, now, advance } = setup({
    guard: { ok: false, reason: "the inventory file failed validation on its last reload" },
  });
  cluster.addNode(node("w1", "False"));
  power.set("w1", "off", now());
  advance(10_000);
  await controller.sync("w1");
  assert.deepEqual(taintsOf(cluster, "w1"), []);
  const [event] = cluster.events.withReason("OutOfServiceBlocked");
  assert.match(event?.message ?? "", /failed validation/);
  assert.equal(await metric('keelson_out_of_service_taints_held_total{reason="blocked"}'), 1);
});

Deno.test("OutOfServiceController never takes the last Ready control-plane host out", async () => {
  const { cluster, power, controller, now, advance } = setup();
  const cp = { "node-role.kubernetes.io/control-plane": "" };
  cluster.addNode(node("cp1", "False", cp));
  cluster.addNode(node("cp2", "Unknown", cp));
  power.set("cp1", "off", now());
  advance(10_000);
  await controller.sync("cp1");
  assert.deepEqual(taintsOf(cluster, "cp1"), []);
  assert.equal(cluster.events.withReason("OutOfServiceBlocked").length, 1);
  cluster.updateNode(
    "cp2",
    (n) => (n.status = { conditions: [{ type: "Ready", status: "True" }] }),
  );
  await controller.sync("cp1");
  assert.equal(taintsOf(cluster, "cp1").length, 1);
});

Deno.test("OutOfServiceController: unknown power or a power read that fails changes nothing", async () => {
  const { cluster, power, controller, now, advance } = setup();
  cluster.addNode(node("w1", "False"));
  cluster.addNode(node("w2", "False"));
  power.states.set("w1", {
    state: "unknown",
    sinceMs: now(),
    answeredAtMs: now() - 1,
    detail: "timeout after 5s",
  });
  power.states.set("w2", new ProviderError("BMC lookup failed"));
  advance(3_600_000);
  await controller.sync("w1");
  await controller.sync("w2");
  assert.equal(cluster.writes.length, 0);
  assert.deepEqual(cluster.events.events, []);
});

Deno.test("OutOfServiceController warns once when the power says off for a Ready Node and taints nothing", async () => {
  const { cluster, power, controller, now, advance } = setup();
  cluster.addNode(node("w1", "True"));
  power.set("w1", "off", now());
  advance(120_000);
  await controller.sync("w1");
  await controller.sync("w1");
  assert.deepEqual(taintsOf(cluster, "w1"), []);
  const events = cluster.events.withReason("PowerStateMismatch");
  assert.equal(events.length, 1);
  assert.equal(events[0]?.type, "Warning");
});

Deno.test("OutOfServiceController fencing: dry run reports only; on forces off with Events before and after", async () => {
  const dry = setup();
  dry.cluster.addNode(node("w1", "False"));
  dry.power.set("w1", "on", dry.now() - 3_600_000);
  await dry.controller.sync("w1"); // first seen NotReady now
  dry.advance(300_000);
  await dry.controller.sync("w1");
  assert.deepEqual(dry.power.forced, []);
  assert.equal(dry.cluster.events.withReason("FencingDryRun").length, 1);
  assert.equal(await dry.metric('keelson_power_fencing_actions_total{result="dry_run"}'), 1);

  const on = setup({ policy: { fencing: "on" } });
  on.cluster.addNode(node("w1", "False"));
  on.power.set("w1", "on", on.now() - 3_600_000);
  await on.controller.sync("w1");
  on.advance(300_000);
  await on.controller.sync("w1");
  await on.controller.sync("w1"); // not again before fence_after has passed once more
  assert.deepEqual(on.power.forced, ["w1"]);
  assert.deepEqual(
    on.cluster.events.events.map((e) => e.reason),
    ["FencingNode", "FencedNode"],
  );
  assert.equal(await on.metric('keelson_power_fencing_actions_total{result="powered_off"}'), 1);

  const failing = setup({ policy: { fencing: "on" } });
  failing.power.forceOffError = new ProviderError("Redfish answered 401");
  failing.cluster.addNode(node("w1", "False"));
  failing.power.set("w1", "on", failing.now() - 3_600_000);
  await failing.controller.sync("w1");
  failing.advance(300_000);
  await failing.controller.sync("w1");
  assert.deepEqual(
    failing.cluster.events.events.map((e) => e.reason),
    ["FencingNode", "FencingFailed"],
  );
  assert.equal(await failing.metric('keelson_power_fencing_actions_total{result="failed"}'), 1);
});

Deno.test("OutOfServiceController never fences the host it runs on", async () => {
  const { cluster, power, controller, advance, now } = setup({
    policy: { fencing: "on" },
    host: "cp1",
  });
  cluster.addNode(node("cp1", "False"));
  power.set("cp1", "on", now());
  await controller.sync("cp1");
  advance(600_000);
  await controller.sync("cp1");
  assert.deepEqual(power.forced, []);
  assert.equal(cluster.events.withReason("FencingBlocked").length, 1);
});

Deno.test("OutOfServiceController.run is told of a power change without any Node event", async () => {
  const cluster = new FakeCluster();
  const power = new FakePower(Date.now);
  cluster.addNode(node("w1", "Unknown"));
  const controller = new OutOfServiceController({
    nodes: cluster.nodes,
    writer: cluster,
    events: cluster.events,
    power,
    registry: new Registry(),
    ledger: firstTermLedger(Date.now).ledger,
  }, {
    policy: () => ({
      enabled: true,
      confirmOffMs: 1_000,
      fencing: "off",
      fenceAfterMs: 300_000,
      maxActionsPerInterval: 1,
      actionIntervalMs: 60_000,
    }),
  });
  const stop = new AbortController();
  const running = controller.run(stop.signal);
  try {
    await holdsFor("no taint while w1 is on", () => taintsOf(cluster, "w1").length === 0, {
      forMs: 100,
    });
    power.set("w1", "off", Date.now());
    await pollUntil("w1's taint", () => taintsOf(cluster, "w1").length > 0, { timeoutMs: 20_000 });
    assert.equal(taintsOf(cluster, "w1").length, 1);
  } finally {
    stop.abort();
    await running;
  }
});

/** One term's controller over a shared cluster, power and Lease store (a process that leads). */
function termController(
  shared: { cluster: FakeCluster; power: FakePower; now: () => number },
  ledger: ActionLedger,
  policy: Partial<PowerActionPolicy> = {},
): OutOfServiceController {
  return new OutOfServiceController({
    nodes: shared.cluster.nodes,
    writer: shared.cluster,
    events: shared.cluster.events,
    power: shared.power,
    registry: new Registry(),
    ledger,
  }, {
    now: shared.now,
    policy: () => ({
      enabled: true,
      confirmOffMs: 5_000,
      fencing: "off",
      fenceAfterMs: 30_000,
      maxActionsPerInterval: 2,
      actionIntervalMs: 60_000,
      ...policy,
    }),
  });
}

/** The next process takes the Lease over and leads with a ledger of its own. */
function nextTerm(leases: MemoryLeases, holder: string, now: () => number): ActionLedger {
  holdLease(leases, holder, 1);
  return termLedger(leases, holder, now);
}

Deno.test("OutOfServiceController: a new leader counts its predecessor's taints, so four machines off do not get four taints in a minute", async () => {
  let now = 1_800_000_000_000;
  const clock = () => now;
  const shared = { cluster: new FakeCluster(), power: new FakePower(clock), now: clock };
  const nodes = ["w1", "w2", "w3", "w4"];
  for (const name of nodes) {
    shared.cluster.addNode(node(name, "Unknown"));
    shared.power.set(name, "off", now);
  }
  now += 10_000;
  const { leases, ledger } = firstTermLedger(clock, "cp-1_a");
  const first = termController(shared, ledger);
  for (const name of nodes.slice(0, 2)) await first.sync(name);
  const tainted = () => nodes.filter((n) => taintsOf(shared.cluster, n).length > 0);
  assert.deepEqual(tainted(), ["w1", "w2"]);
  // SIGTERM to the leader after its two taints; the standby leads 9 s later
  now += 9_000;
  const second = termController(shared, nextTerm(leases, "cp-2_b", clock));
  for (const name of nodes) await second.sync(name);
  assert.deepEqual(tainted(), ["w1", "w2"], "no fresh window for the new leader");
  assert.equal(shared.cluster.events.withReason("OutOfServiceRateLimited").length, 2);
  // and a crash loop: each restart is a new term that reads the same record
  for (let i = 0; i < 5; i++) {
    now += 10_000;
    const restarted = termController(shared, nextTerm(leases, `cp-2_${i}`, clock));
    for (const name of nodes) await restarted.sync(name);
  }
  assert.deepEqual(tainted(), ["w1", "w2"]);
  // a term counts what it finds for one full window from its own start (it cannot prove the
  // writer's times): the other two are taken out of service a window after the last restart
  now += 10_000;
  const last = termController(shared, nextTerm(leases, "cp-1_c", clock));
  for (const name of nodes) await last.sync(name);
  assert.deepEqual(tainted(), ["w1", "w2"]);
  now += 60_000;
  for (const name of nodes) await last.sync(name);
  assert.deepEqual(tainted(), nodes);
});

Deno.test("OutOfServiceController: a new leader counts its predecessor's ForceOffs against the fencing cap", async () => {
  let now = 1_800_000_000_000;
  const clock = () => now;
  const shared = { cluster: new FakeCluster(), power: new FakePower(clock), now: clock };
  for (const name of ["w1", "w2"]) {
    shared.cluster.addNode(node(name, "Unknown"));
    shared.power.set(name, "on", now);
  }
  const policy = { fencing: "on" as const, maxActionsPerInterval: 1, actionIntervalMs: 120_000 };
  const { leases, ledger } = firstTermLedger(clock, "cp-1_a");
  const first = termController(shared, ledger, policy);
  await first.sync("w1");
  now += 30_000;
  await first.sync("w1");
  assert.deepEqual(shared.power.forced, ["w1"]);
  now += 1_000;
  const second = termController(shared, nextTerm(leases, "cp-2_b", clock), policy);
  await second.sync("w2");
  now += 31_000; // past fence_after by the new leader's own sight of w2 NotReady
  await second.sync("w2");
  assert.deepEqual(shared.power.forced, ["w1"], "w1's ForceOff still counts");
  assert.equal(shared.cluster.events.withReason("FencingRateLimited").length, 1);
  now += 90_000;
  await second.sync("w2");
  assert.deepEqual(shared.power.forced, ["w1", "w2"]);
});

Deno.test("OutOfServiceController holds every power action while the record on the leader Lease cannot be read", async () => {
  const { cluster, power, controller, leases, now, advance } = setup();
  cluster.addNode(node("w1", "Unknown"));
  power.set("w1", "off", now());
  advance(10_000);
  leases.down = true;
  await controller.sync("w1");
  assert.deepEqual(taintsOf(cluster, "w1"), []);
  const [held] = cluster.events.withReason("OutOfServiceBlocked");
  assert.match(
    held?.message ?? "",
    /held until their rate limit can be counted: Cannot read the action record on lease "kube-system\/keelson"/,
  );
  leases.down = false;
  advance(1_000);
  await controller.sync("w1");
  assert.equal(taintsOf(cluster, "w1").length, 1);
});

function kubeletLease(name: string, version: number): V1Lease {
  return {
    metadata: { name, namespace: "kube-node-lease", resourceVersion: String(version) },
    spec: { holderIdentity: name, leaseDurationSeconds: 40 },
  };
}

Deno.test("OutOfServiceController: a Ready Node whose machine is off and whose kubelet Lease went silent is marked NotReady, then tainted; one still renewing is not", async () => {
  const cluster = new FakeCluster();
  const leases = new FakeInformer<V1Lease>();
  let now = 1_800_000_000_000;
  const power = new FakePower(() => now);
  const controller = new OutOfServiceController({
    nodes: cluster.nodes,
    writer: cluster,
    events: cluster.events,
    power,
    registry: new Registry(),
    kubeletLeases: leases,
    ledger: firstTermLedger(() => now).ledger,
  }, {
    resyncMs: 5,
    now: () => now,
    // one clock for the test: the Leases' changes and the power are timed alike
    monotonicNow: () => now,
    policy: () => ({
      enabled: true,
      confirmOffMs: 5_000,
      fencing: "off",
      fenceAfterMs: 300_000,
      maxActionsPerInterval: 2,
      actionIntervalMs: 60_000,
      leaseSilenceMs: 15_000,
    }),
  });
  // w-1 loses its power; w-2's BMC says off too, but its kubelet goes on renewing; cp-1 renews
  for (const name of ["w-1", "w-2", "cp-1"]) {
    cluster.addNode(node(name, "True"));
    leases.upsert(kubeletLease(name, 1));
    power.set(name, "on", now);
  }
  const stop = new AbortController();
  const running = controller.run(stop.signal);
  const renew = (names: string[], version: number) => {
    for (const name of names) leases.upsert(kubeletLease(name, version));
  };
  const ready = (name: string) =>
    cluster.nodes.get(name)?.status?.conditions?.find((c) => c.type === "Ready")?.status;
  try {
    // every kubelet renews once while watched; the power goes off 2 s later
    renew(["w-1", "w-2", "cp-1"], 2);
    now += 2_000;
    power.set("w-1", "off", now);
    power.set("w-2", "off", now);
    let version = 3;
    // 14 s after w-1's last renewal: confirmed off, but the silence bound (15 s) has not passed
    for (let t = 0; t < 12; t++) {
      now += 1_000;
      renew(["w-2", "cp-1"], version++);
      await new Promise((resolve) => setTimeout(resolve, 15));
    }
    assert.equal(ready("w-1"), "True");
    now += 1_500;
    renew(["w-2", "cp-1"], version++);
    await pollUntil("w-1 marked NotReady and tainted", () => taintsOf(cluster, "w-1").length > 0);
    assert.equal(ready("w-1"), "Unknown");
    const condition = cluster.nodes.get("w-1")?.status?.conditions?.find((c) => c.type === "Ready");
    assert.equal(condition?.reason, "NodeStatusUnknown");
    const [lost] = cluster.events.withReason("NodePowerLoss");
    assert.equal(lost?.type, "Warning");
    assert.match(lost?.message ?? "", /kube-node-lease\/w-1 for 15\.5s/);
    assert.equal(cluster.events.withReason("OutOfServiceTainted").length, 1);
    // the status first (strategic, with a precondition), then the taint
    const kinds = cluster.writes.filter((w) => w.key === "w-1").map((w) => w.verb);
    assert.deepEqual(kinds, ["patchStatus", "patch"]);
    // w-2, still renewing with its BMC saying off, is never touched
    for (let t = 0; t < 60; t++) {
      now += 1_000;
      renew(["w-2", "cp-1"], version++);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    assert.equal(ready("w-2"), "True");
    assert.deepEqual(taintsOf(cluster, "w-2"), []);
  } finally {
    stop.abort();
    await running;
  }
});

/** A controller over fake Nodes and a hand-driven clock, its syncs recorded in order. */
function fakeTimeController(
  options: { kubeletLeases?: FakeInformer<V1Lease>; resyncMs?: number } = {},
) {
  const clock = new FakeClock(1_800_000_000_000);
  const cluster = new FakeCluster();
  const power = new FakePower(() => clock.now());
  const settings: OutOfServiceOptions = {
    clock,
    monotonicNow: () => clock.now(),
    ...(options.resyncMs === undefined ? {} : { resyncMs: options.resyncMs }),
    policy: () => ({
      enabled: true,
      confirmOffMs: 10_000,
      fencing: "off",
      fenceAfterMs: 300_000,
      maxActionsPerInterval: 2,
      actionIntervalMs: 60_000,
      leaseSilenceMs: 15_000,
    }),
  };
  const controller = new OutOfServiceController({
    nodes: cluster.nodes,
    writer: cluster,
    events: cluster.events,
    power,
    registry: new Registry(),
    ledger: firstTermLedger(() => clock.now()).ledger,
    ...(options.kubeletLeases ? { kubeletLeases: options.kubeletLeases } : {}),
  }, settings);
  const synced: string[] = [];
  const sync = controller.sync.bind(controller);
  controller.sync = (key) => {
    synced.push(key);
    return sync(key);
  };
  /**
   * Moves the clock on a second at a time; each step also lets 50 ms of real time pass, so the
   * worker runs and a loop on the real clock would show too.
   */
  const seconds = async (count: number) => {
    for (let i = 0; i < count; i++) {
      clock.advance(1_000);
      await delay(50);
    }
  };
  return { clock, cluster, power, controller, synced, seconds };
}

Deno.test("OutOfServiceController.run: a power change syncs only its Node, promptly, and no Node is synced every second", async () => {
  const { clock, cluster, power, controller, synced, seconds } = fakeTimeController();
  const names = Array.from({ length: 100 }, (_, i) => `w-${i}`);
  for (const name of names) {
    cluster.addNode(node(name, "Unknown"));
    power.set(name, "on", clock.now());
  }
  const stop = new AbortController();
  const running = controller.run(stop.signal);
  try {
    await pollUntil("the first look at every Node", () => synced.length >= names.length);
    assert.deepEqual([...synced].sort(), [...names].sort());
    // 15 s with nothing changing: no Node is looked at again (it was 100 syncs a second)
    await seconds(15);
    assert.equal(synced.length, names.length, `synced again: ${synced.slice(names.length)}`);
    // one machine's power goes off: its Node alone is synced, before the clock moves at all
    power.set("w-7", "off", clock.now());
    await pollUntil("w-7 synced", () => synced.length > names.length);
    await delay(50);
    assert.deepEqual(synced.slice(names.length), ["w-7"]);
    // confirm_off_for (10 s) runs from the first Off: no taint at 10 s, the taint just after
    await seconds(10);
    assert.deepEqual(taintsOf(cluster, "w-7"), []);
    await seconds(1);
    await pollUntil("w-7 tainted", () => taintsOf(cluster, "w-7").length > 0);
    assert.deepEqual(synced.slice(names.length), ["w-7", "w-7", "w-7"]);
    assert.equal(cluster.events.withReason("OutOfServiceTainted").length, 1);
    assert.deepEqual(names.filter((n) => n !== "w-7" && taintsOf(cluster, n).length > 0), []);
  } finally {
    stop.abort();
    await running;
  }
});

Deno.test("OutOfServiceController.run: the safety-net resync looks at every Node again after 30 s", async () => {
  const { clock, cluster, power, controller, synced, seconds } = fakeTimeController();
  for (const name of ["w-1", "w-2"]) {
    cluster.addNode(node(name, "Unknown"));
    power.set(name, "on", clock.now());
  }
  const stop = new AbortController();
  const running = controller.run(stop.signal);
  try {
    await pollUntil("the first look", () => synced.length >= 2);
    await seconds(29);
    assert.equal(synced.length, 2);
    await seconds(1);
    await pollUntil("the resync", () => synced.length >= 4);
  } finally {
    stop.abort();
    await running;
  }
});

Deno.test("OutOfServiceController.run: a kubelet Lease's silence bound ends in NotReady and the taint at its time, without a resync", async () => {
  const leases = new FakeInformer<V1Lease>();
  const { clock, cluster, power, controller, seconds } = fakeTimeController({
    kubeletLeases: leases,
    // an hour: only a notification or a requeue at a deadline can act in this test
    resyncMs: 3_600_000,
  });
  const ready = (name: string) =>
    cluster.nodes.get(name)?.status?.conditions?.find((c) => c.type === "Ready")?.status;
  for (const name of ["w-1", "cp-1"]) {
    cluster.addNode(node(name, "True"));
    leases.upsert(kubeletLease(name, 1));
    power.set(name, "on", clock.now());
  }
  const stop = new AbortController();
  const running = controller.run(stop.signal);
  try {
    let version = 2;
    // both kubelets renew while watched; w-1's machine loses its power 2 s later, cp-1 renews on
    for (const name of ["w-1", "cp-1"]) leases.upsert(kubeletLease(name, version));
    const renewCp = async (count: number) => {
      for (let i = 0; i < count; i++) {
        await seconds(1);
        leases.upsert(kubeletLease("cp-1", ++version));
      }
    };
    await renewCp(2);
    power.set("w-1", "off", clock.now());
    // 15 s after w-1's last renewal: confirmed off, the silence bound (15 s) only just reached
    await renewCp(13);
    assert.equal(ready("w-1"), "True");
    assert.deepEqual(taintsOf(cluster, "w-1"), []);
    // the look due just after the bound comes in the next second (the clock moves by seconds)
    await renewCp(1);
    await pollUntil("w-1 marked NotReady and tainted", () => taintsOf(cluster, "w-1").length > 0);
    assert.equal(ready("w-1"), "Unknown");
    const [lost] = cluster.events.withReason("NodePowerLoss");
    assert.match(lost?.message ?? "", /kube-node-lease\/w-1 for 16s/);
    assert.equal(ready("cp-1"), "True");
  } finally {
    stop.abort();
    await running;
  }
});

/**
 * The API's Pods, as a field-selector list would answer, except that `leaky` also returns Pods of
 * other Nodes (a list the controller must not trust blindly).
 */
class FakePods implements NodePods {
  readonly pods: NodePod[] = [];
  readonly listed: string[] = [];
  readonly deleted: string[] = [];
  /** Answers a deletion of this uid with 409 (a new Pod under the same name). */
  conflictUid: string | undefined;
  constructor(private readonly leaky = false) {}
  add(name: string, node: string, deleting?: string): void {
    this.pods.push({
      namespace: "apps",
      name,
      uid: `uid-${name}`,
      nodeName: node,
      ...(deleting ? { deletionTimestamp: deleting } : {}),
    });
  }
  list(node: string): Promise<NodePod[]> {
    this.listed.push(node);
    return Promise.resolve(
      this.pods.filter((p) => this.leaky || p.nodeName === node).map((p) => ({ ...p })),
    );
  }
  forceDelete(pod: NodePod): Promise<void> {
    if (pod.uid === this.conflictUid) {
      return Promise.reject(new KubeApiError("uid precondition failed", { code: 409 }));
    }
    const at = this.pods.findIndex((p) => p.uid === pod.uid);
    if (at < 0) return Promise.reject(new KubeApiError("not found", { code: 404 }));
    this.pods.splice(at, 1);
    this.deleted.push(`${pod.namespace}/${pod.name}`);
    return Promise.resolve();
  }
}

const DELETING = "2026-12-02T03:00:00Z";

Deno.test("OutOfServiceController force-deletes at once the terminating Pods of a Node it tainted, and no other Pod", async () => {
  const pods = new FakePods(true);
  const { cluster, power, controller, metric, now, advance } = setup({ pods });
  cluster.addNode(node("w1", "Unknown"));
  cluster.addNode(node("w2", "Unknown"));
  pods.add("web-1", "w1");
  pods.add("tolerant", "w1");
  pods.add("other-node", "w2", DELETING);
  power.set("w1", "off", now());
  advance(10_000);
  // the taint; the Pods are listed only once the cache shows it (the next sync)
  await controller.sync("w1");
  assert.equal(taintsOf(cluster, "w1").length, 1);
  // nothing terminating yet: listed again in a second, nothing deleted
  assert.deepEqual(await controller.sync("w1"), { kind: "requeue", afterMs: 1_000 });
  assert.deepEqual(pods.listed, ["w1"]);
  assert.deepEqual(pods.deleted, []);
  // the taint-eviction controller marks web-1 terminating
  pods.pods[0]!.deletionTimestamp = DELETING;
  advance(1_000);
  assert.deepEqual(await controller.sync("w1"), { kind: "requeue", afterMs: 1_000 });
  assert.deepEqual(pods.deleted, ["apps/web-1"]);
  const [onPod] = cluster.events.withReason("OutOfServicePodDeleted");
  assert.equal(onPod?.object, "Pod/apps/web-1");
  assert.match(
    onPod?.message ?? "",
    /Force-deleted terminating pod apps\/web-1 .* on node w1: Keelson added the out-of-service taint/,
  );
  const [onNode] = cluster.events.withReason("OutOfServicePodsDeleted");
  assert.equal(onNode?.object, "Node/w1");
  assert.match(onNode?.message ?? "", /Force-deleted 1 terminating pod of node w1 \(apps\/web-1\)/);
  assert.equal(await metric('keelson_out_of_service_pod_deletions_total{result="deleted"}'), 1);
  // the tolerant Pod is left; after the window the Node is not listed again
  advance(30_000);
  assert.deepEqual(await controller.sync("w1"), { kind: "done" });
  const lists = pods.listed.length;
  await controller.sync("w1");
  assert.equal(pods.listed.length, lists);
  assert.deepEqual(pods.pods.map((p) => p.name), ["tolerant", "other-node"]);
  // w2 was never tainted: its terminating Pod is kube-controller-manager's business
  await controller.sync("w2");
  assert.ok(!pods.listed.includes("w2"));
});

Deno.test("OutOfServiceController deletes no Pod of a Node tainted by someone else, of a Ready Node, or while a reload is rejected", async () => {
  const pods = new FakePods();
  const { cluster, controller } = setup({ pods });
  cluster.addNode(node("foreign", "Unknown"));
  cluster.updateNode("foreign", (n) => (n.spec = { taints: [{ ...OUT_OF_SERVICE_TAINT }] }));
  pods.add("f", "foreign", DELETING);
  await controller.sync("foreign");
  assert.deepEqual(pods.listed, []);

  const held = setup({ pods, guard: { ok: false, reason: "rejected reload" } });
  held.cluster.addNode(node("w1", "Unknown"));
  held.cluster.updateNode("w1", (n) => {
    n.metadata!.annotations = { [OUT_OF_SERVICE_MARKER]: "2026-12-02T03:00:00.000Z" };
    n.spec = { taints: [{ ...OUT_OF_SERVICE_TAINT }] };
  });
  pods.add("h", "w1", DELETING);
  await held.controller.sync("w1");
  assert.deepEqual(pods.listed, []);
  assert.deepEqual(pods.deleted, []);

  // Keelson's own taint on a Node Ready again: the taint goes, no Pod does
  const ready = setup({ pods });
  ready.cluster.addNode(node("w1", "True"));
  ready.cluster.updateNode("w1", (n) => {
    n.metadata!.annotations = { [OUT_OF_SERVICE_MARKER]: "2026-12-02T03:00:00.000Z" };
    n.spec = { taints: [{ ...OUT_OF_SERVICE_TAINT }] };
  });
  await ready.controller.sync("w1");
  assert.deepEqual(pods.listed, []);
  assert.deepEqual(pods.deleted, []);
});

Deno.test("OutOfServiceController: a Pod replaced under the same name (uid precondition) is not deleted nor reported", async () => {
  const pods = new FakePods();
  const { cluster, controller, metric } = setup({ pods });
  cluster.addNode(node("w1", "Unknown"));
  cluster.updateNode("w1", (n) => {
    n.metadata!.annotations = { [OUT_OF_SERVICE_MARKER]: "2026-12-02T03:00:00.000Z" };
    n.spec = { taints: [{ ...OUT_OF_SERVICE_TAINT }] };
  });
  pods.add("web-1", "w1", DELETING);
  pods.conflictUid = "uid-web-1";
  await controller.sync("w1");
  assert.deepEqual(pods.deleted, []);
  assert.deepEqual(cluster.events.withReason("OutOfServicePodDeleted"), []);
  assert.deepEqual(cluster.events.withReason("OutOfServicePodsDeleted"), []);
  assert.equal(await metric('keelson_out_of_service_pod_deletions_total{result="gone"}'), 1);
});

Deno.test("OutOfServiceController forgets a deleted Node whole: the same name back is a new Node, its held action said again", async () => {
  const { cluster, power, controller, now, advance } = setup({
    guard: { ok: false, reason: "the inventory file failed validation on its last reload" },
  });
  cluster.addNode(node("w1", "False"));
  power.set("w1", "off", now());
  advance(10_000);
  await controller.sync("w1");
  await controller.sync("w1");
  assert.equal(cluster.events.withReason("OutOfServiceBlocked").length, 1, "said once");
  await cluster.deleteNode("w1");
  assert.deepEqual(await controller.sync("w1"), { kind: "done" });
  cluster.addNode(node("w1", "False"));
  await controller.sync("w1");
  assert.equal(cluster.events.withReason("OutOfServiceBlocked").length, 2, "said again");
});
