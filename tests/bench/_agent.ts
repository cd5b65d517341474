/**
 * One `keelson run` against a fresh control plane, for the API benchmarks: the inventory is
 * written by the benchmark, the agent runs as a child process exactly as systemd would run it,
 * and its API cost is read from its own `rest_client_requests_total` on /metrics.
 *
 * @module
 */
import { type ControlPlane, startControlPlane } from "../integration/_harness/control_plane.ts";
import { type KeelsonProcess, startKeelson } from "../integration/_harness/keelson_process.ts";
import { waitFor } from "../integration/_harness/wait.ts";
import { sleep } from "./_report.ts";

/** The client-side rate limit the agent runs with. */
export interface ApiLimit {
  /** `--kube-api-qps`; undefined keeps the default (20). */
  qps?: number;
  /** `--kube-api-burst`; undefined keeps the default (30). */
  burst?: number;
}

/** The upstream default (client-go QPS 20 / burst 30 as cloud-controller-manager sets them). */
export const DEFAULT_LIMIT: ApiLimit = {};
/** A raised limit, to show what the default costs. */
export const RAISED_LIMIT: ApiLimit = { qps: 200, burst: 300 };

/**
 * A readable name of a limit.
 * @param limit the limit
 * @returns e.g. "QPS 20 / burst 30 (default)"
 */
export function describeLimit(limit: ApiLimit): string {
  return limit.qps === undefined && limit.burst === undefined
    ? "QPS 20 / burst 30 (default)"
    : `--kube-api-qps ${limit.qps ?? 20} --kube-api-burst ${limit.burst ?? 30}`;
}

/** The agent's API request counters at one moment. */
export interface RequestCounts {
  /** Sum of every `rest_client_requests_total` sample. */
  total: number;
  /** The same by HTTP method. */
  byMethod: Record<string, number>;
  /** Seconds spent waiting for the client-side rate limiter (sum of the histogram). */
  rateLimiterWaitS: number;
}

/**
 * Reads the agent's request counters from /metrics.
 * @param agent the running agent
 * @returns the counters
 * @throws {Error} when /metrics does not answer
 */
export async function requestCounts(agent: KeelsonProcess): Promise<RequestCounts> {
  // a busy agent on a loaded machine may miss the 2 s timeout of one scrape
  let response = await agent.get("/metrics");
  for (let attempt = 0; attempt < 10 && response?.status !== 200; attempt++) {
    await sleep(500);
    response = await agent.get("/metrics");
  }
  if (!response || response.status !== 200) throw new Error("keelson /metrics does not answer");
  const counts: RequestCounts = { total: 0, byMethod: {}, rateLimiterWaitS: 0 };
  for (const line of response.body.split("\n")) {
    if (line.startsWith("rest_client_requests_total{")) {
      const value = Number(line.slice(line.lastIndexOf(" ") + 1));
      const method = /method="([^"]*)"/.exec(line)?.[1] ?? "?";
      counts.total += value;
      counts.byMethod[method] = (counts.byMethod[method] ?? 0) + value;
    } else if (line.startsWith("rest_client_rate_limiter_duration_seconds_sum")) {
      counts.rateLimiterWaitS += Number(line.slice(line.lastIndexOf(" ") + 1));
    }
  }
  return counts;
}

/**
 * The counters once they have stopped moving for `quietMs` (the agent's trailing writes, such as
 * the address patch and the event after a Node's taint is gone, are part of its cost).
 * @param agent the running agent
 * @param quietMs how long the total must stay the same
 * @param timeoutMs give up waiting and return the last reading after this long
 * @returns the settled counters
 */
export async function settledCounts(
  agent: KeelsonProcess,
  quietMs = 2000,
  timeoutMs = 60_000,
): Promise<RequestCounts> {
  const deadline = Date.now() + timeoutMs;
  let last = await requestCounts(agent);
  let since = Date.now();
  while (Date.now() < deadline) {
    await sleep(250);
    const now = await requestCounts(agent);
    if (now.total !== last.total) {
      last = now;
      since = Date.now();
    } else if (Date.now() - since >= quietMs) {
      return now;
    }
  }
  return last;
}

/**
 * The counters' growth between two readings, by method, as "GET 12, PUT 100".
 * @param before the first reading
 * @param after the second reading
 * @param per divide each by this (e.g. the number of objects)
 * @returns the text
 */
export function describeDelta(before: RequestCounts, after: RequestCounts, per: number): string {
  return Object.keys(after.byMethod).sort().map((method) => {
    const delta = (after.byMethod[method] ?? 0) - (before.byMethod[method] ?? 0);
    return `${method} ${(delta / per).toFixed(2)}`;
  }).filter((text) => !text.endsWith(" 0.00")).join(", ");
}

/** A control plane with one leading agent. */
export interface AgentBed extends AsyncDisposable {
  cp: ControlPlane;
  agent: KeelsonProcess;
  dir: string;
  /** Idle request rate of the agent (leases, periodic work), requests per second. */
  idleRate: number;
}

/** Options of `startAgentBed`. */
export interface AgentBedOptions {
  /** The inventory text. */
  inventory: string;
  /** The agent's client-side rate limit. */
  limit: ApiLimit;
  /** Extra kube-apiserver flags. */
  apiserverArgs?: string[];
  /** Runs after the control plane is up and before the agent starts (e.g. register Nodes). */
  prepare?: (cp: ControlPlane) => Promise<void>;
}

/**
 * Starts a control plane and one `keelson run`, waits until the agent leads and is ready, then
 * measures its idle request rate over a few seconds (subtracted from the figures later).
 * @param options inventory, rate limit, apiserver flags, preparation
 * @returns the bed; dispose of it to stop everything and remove the directory
 * @throws {Error} when the agent does not lead within a minute
 */
export async function startAgentBed(options: AgentBedOptions): Promise<AgentBed> {
  const cp = await startControlPlane({ apiserverArgs: options.apiserverArgs ?? [] });
  const dir = await Deno.makeTempDir({ prefix: "keelson-bench-" });
  let agent: KeelsonProcess | undefined;
  const stop = async (): Promise<void> => {
    await agent?.stop();
    await cp.stop();
    if (Deno.env.get("KEELSON_KEEP_BENCH") !== "1") {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  };
  try {
    await options.prepare?.(cp);
    const configPath = `${dir}/keelson.toml`;
    await Deno.writeTextFile(configPath, options.inventory);
    const args: string[] = [];
    if (options.limit.qps !== undefined) args.push("--kube-api-qps", String(options.limit.qps));
    if (options.limit.burst !== undefined) {
      args.push("--kube-api-burst", String(options.limit.burst));
    }
    agent = await startKeelson({
      configPath,
      kubeconfig: cp.tokenKubeconfigPath,
      host: "bench",
      dir,
      args,
      source: true,
      permissions: ["--allow-all"],
    });
    const running = agent;
    await waitFor(
      async () =>
        (await running.metric('leader_election_master_status{name="keelson"}')) === 1 &&
        (await running.get("/readyz"))?.status === 200,
      { timeoutMs: 60_000, intervalMs: 200, message: "the agent to lead and be ready" },
    );
    // let the start-up work (informer lists, first syncs) finish, then time the idle rate
    const quiet = await settledCounts(running, 1500, 30_000);
    const idleMs = 6000;
    await sleep(idleMs);
    const after = await requestCounts(running);
    const idleRate = (after.total - quiet.total) / (idleMs / 1000);
    return { cp, agent: running, dir, idleRate, [Symbol.asyncDispose]: stop };
  } catch (error) {
    if (agent) {
      const log = await agent.log();
      await stop();
      throw new Error(`${String(error)}\n--- keelson log tail\n${log.slice(-4000)}`);
    }
    await stop();
    throw error;
  }
}
