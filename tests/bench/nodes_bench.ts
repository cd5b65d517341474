/**
 * Benchmark: N Nodes registered at once, the way kubelets with `--cloud-provider=external` do
 * (uninitialized taint, provided-node-ip annotation), against one `keelson run` whose inventory
 * lists N machines. Prints time-to-initialized per Node (from the moment the apiserver announced
 * the Node to the moment its taint is gone and its providerID set), and the agent's API requests
 * per Node. Figures only: nothing is asserted.
 *
 * Run: `deno task bench nodes 100` (see tests/bench/README.md).
 *
 * @module
 */
import type { V1Node } from "@kubernetes/client-node";
import { registerNode, UNINITIALIZED_TAINT } from "../integration/_harness/kubelet.ts";
import {
  type ApiLimit,
  describeDelta,
  describeLimit,
  requestCounts,
  settledCounts,
  startAgentBed,
} from "./_agent.ts";
import { duration, forEachConcurrently, say, summarize, within } from "./_report.ts";
import { startWatch } from "./_watch.ts";

/** How many registrations the benchmark keeps in flight (kubelets are independent hosts). */
const REGISTER_CONCURRENCY = 32;

/** The name of the i-th benchmark Node (and machine). */
function nodeName(i: number): string {
  return `node-${String(i).padStart(5, "0")}`;
}

/** The i-th machine's InternalIP: 10.200.0.1 upwards, 250 per /24. */
function nodeIp(i: number): string {
  return `10.200.${Math.floor(i / 250)}.${(i % 250) + 1}`;
}

/**
 * An inventory of `n` worker machines named like the Nodes, spread over three zones.
 * @param n the number of machines
 * @returns the TOML text
 */
export function nodesInventory(n: number): string {
  const machines = Array.from({ length: n }, (_, i) => `
[[machines]]
name = "${nodeName(i)}"
id = "SN-${String(i).padStart(6, "0")}"
region = "dc1"
zone = "dc1-z${i % 3}"
instance_type = "r650-2x32c-512g"
internal_ips = ["${nodeIp(i)}"]
labels = { "example.com/rack" = "r${i % 40}" }`).join("\n");
  return `
[cluster]
name = "bench"

[keepalived]
enabled = false

[[pools]]
name = "lan"
addresses = ["192.0.2.0/28"]
${machines}
`;
}

/** What one run measured. */
export interface NodesBenchResult {
  n: number;
  limit: ApiLimit;
  initializedMs: number[];
  totalMs: number;
  requestsPerNode: number;
}

/**
 * Registers `n` Nodes at once and measures how long the agent takes to initialize each.
 * @param n the number of Nodes
 * @param limit the agent's client-side rate limit
 * @returns the figures (also printed)
 * @throws {Error} when not every Node is initialized within the time allowed
 */
export async function runNodesBench(n: number, limit: ApiLimit): Promise<NodesBenchResult> {
  say(`\n== nodes: N = ${n}, ${describeLimit(limit)}`);
  await using bed = await startAgentBed({ inventory: nodesInventory(n), limit });
  const { cp, agent } = bed;

  const addedAt = new Map<string, number>();
  const initializedAt = new Map<string, number>();
  let allDone: () => void = () => {};
  const finished = new Promise<void>((resolve) => allDone = resolve);
  await using watch = await startWatch<V1Node>(cp, "/api/v1/nodes", ({ object, atMs }) => {
    const name = object.metadata?.name ?? "";
    if (!addedAt.has(name)) addedAt.set(name, atMs);
    const tainted = (object.spec?.taints ?? []).some((t) => t.key === UNINITIALIZED_TAINT);
    if (!tainted && object.spec?.providerID && !initializedAt.has(name)) {
      initializedAt.set(name, atMs);
      if (initializedAt.size === n) allDone();
    }
  });

  const before = await requestCounts(agent);
  const began = performance.now();
  const names = Array.from({ length: n }, (_, i) => nodeName(i));
  const registering = forEachConcurrently(names, REGISTER_CONCURRENCY, async (name, i) => {
    await registerNode(cp, name, { providedNodeIp: nodeIp(i) });
  });
  await registering;
  const registeredMs = performance.now() - began;
  const timeoutMs = 120_000 + n * 500;
  await within(
    Promise.race([finished, watch.ended]),
    timeoutMs,
    () => `Only ${initializedAt.size} of ${n} Nodes initialized in ${timeoutMs} ms`,
  );
  const totalMs = performance.now() - began;
  const after = await settledCounts(agent);
  const elapsedS = (performance.now() - began) / 1000;

  const initializedMs = names.map((name) => initializedAt.get(name)! - addedAt.get(name)!);
  const s = summarize(initializedMs);
  const requests = after.total - before.total;
  const background = bed.idleRate * elapsedS;
  const requestsPerNode = (requests - background) / n;
  say(`registered ${n} Nodes in ${duration(registeredMs)} (${REGISTER_CONCURRENCY} in flight)`);
  say(
    `time-to-initialized per Node: p50 ${duration(s.p50)}, p99 ${duration(s.p99)}, ` +
      `max ${duration(s.max)}, mean ${duration(s.mean)}`,
  );
  say(`all ${n} initialized after ${duration(totalMs)} (from the first registration)`);
  say(
    `API requests per Node: ${requestsPerNode.toFixed(2)} ` +
      `(${requests} in all, minus ${background.toFixed(0)} idle-rate requests ` +
      `at ${bed.idleRate.toFixed(2)}/s; by method per Node: ${describeDelta(before, after, n)})`,
  );
  say(
    `client-side rate-limiter wait: ${
      (after.rateLimiterWaitS - before.rateLimiterWaitS).toFixed(1)
    } s summed over requests`,
  );
  return { n, limit, initializedMs, totalMs, requestsPerNode };
}
