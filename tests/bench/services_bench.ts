/**
 * Benchmark: N LoadBalancer Services created at once against one `keelson run` whose pool is
 * large enough for all of them. Prints the time from each Service's creation (as the apiserver
 * announced it) until its `status.loadBalancer.ingress` is set, and the agent's API requests per
 * Service. Figures only: nothing is asserted.
 *
 * Run: `deno task bench services 100` (see tests/bench/README.md).
 *
 * @module
 */
import type { V1Service } from "@kubernetes/client-node";
import { registerNode } from "../integration/_harness/kubelet.ts";
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

/** How many creations the benchmark keeps in flight. */
const CREATE_CONCURRENCY = 32;
/** The benchmark's namespace. */
const NAMESPACE = "bench";
/** Worker Nodes the load balancers point at (eligible: Ready, no exclusion label). */
const WORKERS = 3;
/**
 * The apiserver's ClusterIP range: the harness's /24 holds 254 Services, too few for N = 1000
 * (a flag given twice: the last one wins).
 */
const SERVICE_CIDR = "10.96.0.0/16";

/**
 * An inventory with three worker machines and one pool of 4094 addresses.
 * @returns the TOML text
 */
export function servicesInventory(): string {
  const machines = Array.from({ length: WORKERS }, (_, i) => `
[[machines]]
name = "w-${i + 1}"
zone = "z${i}"
region = "r1"
internal_ips = ["10.200.0.${i + 1}"]`).join("\n");
  return `
[cluster]
name = "bench"

[keepalived]
enabled = false

[[pools]]
name = "lan"
addresses = ["198.18.0.0/20"]
${machines}
`;
}

/** What one run measured. */
export interface ServicesBenchResult {
  n: number;
  limit: ApiLimit;
  ingressMs: number[];
  totalMs: number;
  requestsPerService: number;
}

function serviceName(i: number): string {
  return `svc-${String(i).padStart(5, "0")}`;
}

/**
 * Creates `n` LoadBalancer Services at once and measures how long each waits for its ingress.
 * @param n the number of Services
 * @param limit the agent's client-side rate limit
 * @returns the figures (also printed)
 * @throws {Error} when not every Service has an ingress within the time allowed
 */
export async function runServicesBench(n: number, limit: ApiLimit): Promise<ServicesBenchResult> {
  say(`\n== services: N = ${n}, ${describeLimit(limit)}`);
  await using bed = await startAgentBed({
    inventory: servicesInventory(),
    limit,
    apiserverArgs: [`--service-cluster-ip-range=${SERVICE_CIDR}`],
    prepare: async (cp) => {
      await cp.requestOk("POST", "/api/v1/namespaces", { metadata: { name: NAMESPACE } });
      for (let i = 1; i <= WORKERS; i++) {
        await registerNode(cp, `w-${i}`, {
          providedNodeIp: `10.200.0.${i}`,
          providerID: `baremetal://w-${i}`,
          initialized: true,
        });
      }
    },
  });
  const { cp, agent } = bed;

  const addedAt = new Map<string, number>();
  const ingressAt = new Map<string, number>();
  let allDone: () => void = () => {};
  const finished = new Promise<void>((resolve) => allDone = resolve);
  await using watch = await startWatch<V1Service>(
    cp,
    `/api/v1/namespaces/${NAMESPACE}/services`,
    ({ object, atMs }) => {
      const name = object.metadata?.name ?? "";
      if (!addedAt.has(name)) addedAt.set(name, atMs);
      if ((object.status?.loadBalancer?.ingress ?? []).length > 0 && !ingressAt.has(name)) {
        ingressAt.set(name, atMs);
        if (ingressAt.size === n) allDone();
      }
    },
  );

  const before = await requestCounts(agent);
  const began = performance.now();
  const names = Array.from({ length: n }, (_, i) => serviceName(i));
  await forEachConcurrently(names, CREATE_CONCURRENCY, async (name) => {
    await cp.requestOk("POST", `/api/v1/namespaces/${NAMESPACE}/services`, {
      metadata: { name, labels: { app: name } },
      spec: {
        type: "LoadBalancer",
        selector: { app: name },
        ports: [{ name: "http", port: 80, targetPort: 8080, protocol: "TCP" }],
      },
    });
  });
  const createdMs = performance.now() - began;
  const timeoutMs = 120_000 + n * 500;
  await within(
    Promise.race([finished, watch.ended]),
    timeoutMs,
    () => `Only ${ingressAt.size} of ${n} Services got an ingress in ${timeoutMs} ms`,
  );
  const totalMs = performance.now() - began;
  const after = await settledCounts(agent);
  const elapsedS = (performance.now() - began) / 1000;

  const ingressMs = names.map((name) => ingressAt.get(name)! - addedAt.get(name)!);
  const s = summarize(ingressMs);
  const requests = after.total - before.total;
  const background = bed.idleRate * elapsedS;
  const requestsPerService = (requests - background) / n;
  say(`created ${n} Services in ${duration(createdMs)} (${CREATE_CONCURRENCY} in flight)`);
  say(
    `time-to-ingress per Service: p50 ${duration(s.p50)}, p99 ${duration(s.p99)}, ` +
      `max ${duration(s.max)}, mean ${duration(s.mean)}`,
  );
  say(`all ${n} have an ingress after ${duration(totalMs)} (from the first creation)`);
  say(
    `API requests per Service: ${requestsPerService.toFixed(2)} ` +
      `(${requests} in all, minus ${background.toFixed(0)} idle-rate requests ` +
      `at ${bed.idleRate.toFixed(2)}/s; by method per Service: ${describeDelta(before, after, n)})`,
  );
  say(
    `client-side rate-limiter wait: ${
      (after.rateLimiterWaitS - before.rateLimiterWaitS).toFixed(1)
    } s summed over requests`,
  );
  return { n, limit, ingressMs, totalMs, requestsPerService };
}
