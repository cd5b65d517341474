/**
 * Side by side: the stock upstream cloud-controller-manager (k8s.io/cloud-provider with its
 * `fake` provider, built from the Go module proxy by build_upstream_ccm.sh) and `keelson run`, on
 * the same real kube-apiserver build, a fresh etcd and apiserver per run, with equal budgets:
 * `--kube-api-qps 20 --kube-api-burst 30`, one worker per controller, leader election off, the
 * same admin identity. Prints one table of figures and the ratios. A benchmark, not a test:
 * nothing asserts a timing.
 *
 * Per run (one implementation, one scenario): a Service exists before the process starts (start
 * to first object done = spawn until its ingress is seen), then the scenario:
 * - `services N`: N LoadBalancer Services created at once (32 in flight): wall until all have an
 *   ingress, and the process's CPU time over the scenario;
 * - `nodes N`: N Nodes registered at once like kubelets with `--cloud-provider=external`
 *   (uninitialized taint, provided node IP): wall until all are initialized;
 * - `mixed N`: N Nodes and N Services at once: wall until all are done;
 * - `idle`: one Service every 300 ms, 50 of them: time from creation to ingress, p50/p99;
 * - `idle-nodes`: one Node every 300 ms, 50 of them: time from registration to initialized; with
 *   `KEELSON_PEERS_CAPTURE=1` also the per-Node figures from a loopback packet capture
 *   (`_wire_capture.ts`: the agent's reaction and the apiserver's share);
 * - `quiet S`: nothing happens for S seconds (caches synced, the 100-machine inventory of
 *   `nodes`): the CPU a connected agent spends per second doing nothing.
 * Peak RSS is the process's VmHWM at the end of each run. `KEELSON_PEERS_LOG=FILE` keeps the last
 * Keelson run's output there (with V8's `--trace-gc` among the flags: its collections).
 *
 * Run: `deno task bench peers [scenario ...]` (see tests/bench/README.md).
 *
 * @module
 */
import type { V1Node, V1Service } from "@kubernetes/client-node";
import { type ControlPlane, startControlPlane } from "../../integration/_harness/control_plane.ts";
import { startKeelson } from "../../integration/_harness/keelson_process.ts";
import { registerNode, UNINITIALIZED_TAINT } from "../../integration/_harness/kubelet.ts";
import { ManagedProcess } from "../../integration/_harness/process.ts";
import { duration, forEachConcurrently, say, sleep, summarize, within } from "../_report.ts";
import { startWatch } from "../_watch.ts";
import { nodesInventory } from "../nodes_bench.ts";
import { servicesInventory } from "../services_bench.ts";
import { bundleKeelson } from "../_bundle.ts";
import { processMemory } from "../_process_stats.ts";
import { lbService } from "../_lb_service.ts";
import { startWireCapture, type WireFigures } from "./_wire_capture.ts";

/** The equal budget both run with (upstream CCM defaults). */
const QPS = 20;
const BURST = 30;
/** Creations kept in flight. */
const CONCURRENCY = 32;
const NAMESPACE = "bench";
/** Enough ClusterIPs for 1000+ Services (the harness's /24 holds 254). */
const SERVICE_CIDR = "10.96.0.0/16";
/** Enough NodePorts for 5000 Services (the default range holds 2768). */
const NODE_PORT_RANGE = "20000-32767";

/** One scenario of the table; `qps`/`burst` override the equal budget of both. */
export type Scenario =
  & (
    | { kind: "services"; n: number }
    | { kind: "nodes"; n: number }
    | { kind: "mixed"; n: number }
    | { kind: "idle" | "idle-nodes"; n: number; everyMs: number }
    | { kind: "quiet"; n: number }
  )
  & { qps?: number; burst?: number };

/** The default table: Services and Nodes at 100 and 1000, idle Services, idle Nodes. */
export const DEFAULT_SCENARIOS: Scenario[] = [
  { kind: "services", n: 100 },
  { kind: "services", n: 1000 },
  { kind: "nodes", n: 100 },
  { kind: "nodes", n: 1000 },
  { kind: "idle", n: 50, everyMs: 300 },
  { kind: "idle-nodes", n: 50, everyMs: 300 },
];

/** What one run measured. */
export interface RunResult {
  /** Spawn until the pre-existing Service had its ingress. */
  firstObjectMs: number;
  /** All N done, from the first creation (services/nodes). */
  wallMs?: number;
  /** Per-object latency (idle). */
  latency?: { p50: number; p99: number };
  /** Per-Node figures from a packet capture (idle-nodes with KEELSON_PEERS_CAPTURE=1). */
  wire?: WireFigures;
  /** VmHWM at the end, in MB. */
  peakRssMb: number;
  /** user + system CPU over the scenario, in seconds. */
  cpuS: number;
}

type Implementation = "upstream" | "keelson";

/** A started controller manager. */
interface Running {
  pid: number;
  log(): Promise<string>;
  stop(): Promise<void>;
}

function scenarioName(s: Scenario): string {
  const budget = s.qps !== undefined || s.burst !== undefined
    ? ` (QPS ${s.qps ?? QPS} / burst ${s.burst ?? BURST})`
    : "";
  if (s.kind === "idle") return `idle: 1 Service every ${s.everyMs} ms, ${s.n} of them${budget}`;
  if (s.kind === "idle-nodes") return `idle: 1 Node every ${s.everyMs} ms, ${s.n} of them${budget}`;
  if (s.kind === "quiet") return `nothing to do for ${s.n} s${budget}`;
  const what = s.kind === "services"
    ? "Services"
    : s.kind === "nodes"
    ? "Nodes"
    : `Nodes + ${s.n} Services`;
  return `${s.n} ${what} at once${budget}`;
}

/** Reads /proc for a pid: peak RSS (MB) and CPU seconds so far. */
async function processStats(pid: number): Promise<{ peakRssMb: number; cpuS: number }> {
  const { peakMb, cpuS } = await processMemory(pid);
  return { peakRssMb: peakMb, cpuS };
}

function startUpstream(
  binary: string,
  cp: ControlPlane,
  dir: string,
  budget: { qps: number; burst: number },
): Running {
  const process = new ManagedProcess("upstream-ccm", binary, [
    "--cloud-provider=fake",
    `--kubeconfig=${cp.tokenKubeconfigPath}`,
    `--authentication-kubeconfig=${cp.tokenKubeconfigPath}`,
    `--authorization-kubeconfig=${cp.tokenKubeconfigPath}`,
    "--leader-elect=false",
    `--kube-api-qps=${budget.qps}`,
    `--kube-api-burst=${budget.burst}`,
    "--concurrent-service-syncs=1",
    "--concurrent-node-syncs=1",
    "--cluster-name=bench",
    "--configure-cloud-routes=false",
    "--secure-port=0",
    "--v=1",
  ], `${dir}/upstream-ccm.log`);
  process.start();
  return {
    pid: process.pid!,
    log: () => Deno.readTextFile(process.logPath).catch(() => ""),
    stop: async () => {
      await process.stop(10_000);
    },
  };
}

async function startKeelsonRun(
  inventory: string,
  cp: ControlPlane,
  dir: string,
  budget: { qps: number; burst: number },
  entry: string | undefined,
): Promise<Running> {
  const configPath = `${dir}/keelson.toml`;
  Deno.writeTextFileSync(configPath, inventory);
  // KEELSON_PEERS_DENO_FLAGS (space-separated) replaces the compiled binary's runtime flags
  const flags = Deno.env.get("KEELSON_PEERS_DENO_FLAGS");
  const agent = await startKeelson({
    configPath,
    kubeconfig: cp.tokenKubeconfigPath,
    host: "bench",
    dir,
    ...(entry ? { entry } : { source: true }),
    permissions: ["--allow-all"],
    ...(flags ? { runtimeFlags: flags.split(" ").filter((f) => f !== "") } : {}),
    args: [
      "--leader-elect=false",
      "--kube-api-qps",
      String(budget.qps),
      "--kube-api-burst",
      String(budget.burst),
      "--concurrent-service-syncs",
      "1",
      "--concurrent-node-syncs",
      "1",
      "--log-level",
      "warning",
    ],
  });
  return {
    pid: agent.process.pid!,
    log: () => agent.log(),
    stop: () => agent.stop(),
  };
}

function hasIngress(service: V1Service): boolean {
  return (service.status?.loadBalancer?.ingress ?? []).length > 0;
}

function isInitialized(node: V1Node): boolean {
  return Boolean(node.spec?.providerID) &&
    !(node.spec?.taints ?? []).some((taint) => taint.key === UNINITIALIZED_TAINT);
}

/**
 * One implementation, one scenario, on a fresh control plane.
 * @param impl which controller manager
 * @param scenario what to do
 * @param upstreamBinary the built upstream CCM
 * @param keelsonEntry what `deno run` runs for Keelson: a bundle (as the compiled binary), or
 *   main.ts when undefined
 * @returns the figures
 */
export async function runOnce(
  impl: Implementation,
  scenario: Scenario,
  upstreamBinary: string,
  keelsonEntry?: string,
): Promise<RunResult> {
  await using cp = await startControlPlane({
    apiserverArgs: [
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      `--service-node-port-range=${NODE_PORT_RANGE}`,
    ],
  });
  const dir = await Deno.makeTempDir({ prefix: `keelson-peers-${impl}-` });
  let running: Running | undefined;
  try {
    await cp.requestOk("POST", "/api/v1/namespaces", { metadata: { name: NAMESPACE } });
    const workers = scenario.kind === "services" || scenario.kind === "idle" ? 3 : 0;
    for (let i = 1; i <= workers; i++) {
      await registerNode(cp, `w-${i}`, {
        providedNodeIp: `10.200.0.${i}`,
        providerID: impl === "keelson" ? `baremetal://w-${i}` : `fake://w-${i}`,
        initialized: true,
      });
    }
    const services = new Map<string, { added?: number; ingress?: number }>();
    const nodes = new Map<string, { added?: number; done?: number }>();
    let wake: () => void = () => {};
    await using serviceWatch = await startWatch<V1Service>(
      cp,
      `/api/v1/namespaces/${NAMESPACE}/services`,
      ({ object, atMs }) => {
        const entry = services.get(object.metadata!.name!) ?? {};
        entry.added ??= atMs;
        if (hasIngress(object)) entry.ingress ??= atMs;
        services.set(object.metadata!.name!, entry);
        wake();
      },
    );
    await using nodeWatch = await startWatch<V1Node>(cp, "/api/v1/nodes", ({ object, atMs }) => {
      const entry = nodes.get(object.metadata!.name!) ?? {};
      entry.added ??= atMs;
      if (isInitialized(object)) entry.done ??= atMs;
      nodes.set(object.metadata!.name!, entry);
      wake();
    });
    const until = async (what: string, done: () => boolean, timeoutMs: number) => {
      const reached = new Promise<void>((resolve) => {
        wake = () => {
          if (done()) resolve();
        };
        wake();
      });
      await within(
        Promise.race([reached, serviceWatch.ended, nodeWatch.ended]),
        timeoutMs,
        () => `${impl}: ${what} not reached in ${timeoutMs} ms`,
      );
    };

    // the object that exists before the process starts
    await cp.requestOk("POST", `/api/v1/namespaces/${NAMESPACE}/services`, lbService("first"));
    const inventory = scenario.kind === "quiet"
      ? nodesInventory(100)
      : scenario.kind === "nodes" || scenario.kind === "idle-nodes"
      ? nodesInventory(scenario.n)
      : scenario.kind === "mixed"
      // the Nodes' machines, and a pool for N Services
      ? nodesInventory(scenario.n).replace('"192.0.2.0/28"', '"198.18.0.0/16"')
      : servicesInventory();
    const budget = { qps: scenario.qps ?? QPS, burst: scenario.burst ?? BURST };
    const spawned = performance.now();
    running = impl === "upstream"
      ? startUpstream(upstreamBinary, cp, dir, budget)
      : await startKeelsonRun(inventory, cp, dir, budget, keelsonEntry);
    await until("the first Service's ingress", () => !!services.get("first")?.ingress, 120_000);
    const firstObjectMs = services.get("first")!.ingress! - spawned;
    await sleep(1000); // start-up work settles
    const before = await processStats(running.pid);
    const result: RunResult = { firstObjectMs, peakRssMb: NaN, cpuS: NaN };
    const began = performance.now();
    if (scenario.kind === "services") {
      const names = Array.from({ length: scenario.n }, (_, i) => `svc-${i}`);
      await forEachConcurrently(names, CONCURRENCY, async (name) => {
        await cp.requestOk("POST", `/api/v1/namespaces/${NAMESPACE}/services`, lbService(name));
      });
      await until(
        `${scenario.n} ingresses`,
        () => names.every((n) => services.get(n)?.ingress),
        120_000 + scenario.n * 1000,
      );
      result.wallMs = Math.max(...names.map((n) => services.get(n)!.ingress!)) - began;
    } else if (scenario.kind === "mixed") {
      const nodeNames = Array.from(
        { length: scenario.n },
        (_, i) => `node-${String(i).padStart(5, "0")}`,
      );
      const serviceNames = Array.from({ length: scenario.n }, (_, i) => `svc-${i}`);
      await Promise.all([
        forEachConcurrently(nodeNames, CONCURRENCY / 2, async (name, i) => {
          await registerNode(cp, name, {
            providedNodeIp: `10.200.${Math.floor(i / 250)}.${(i % 250) + 1}`,
          });
        }),
        forEachConcurrently(serviceNames, CONCURRENCY / 2, async (name) => {
          await cp.requestOk("POST", `/api/v1/namespaces/${NAMESPACE}/services`, lbService(name));
        }),
      ]);
      await until(
        `${scenario.n} Nodes and ${scenario.n} Services done`,
        () =>
          nodeNames.every((n) => nodes.get(n)?.done) &&
          serviceNames.every((n) => services.get(n)?.ingress),
        120_000 + scenario.n * 2000,
      );
      result.wallMs = Math.max(
        ...nodeNames.map((n) => nodes.get(n)!.done!),
        ...serviceNames.map((n) => services.get(n)!.ingress!),
      ) - began;
    } else if (scenario.kind === "nodes") {
      const names = Array.from(
        { length: scenario.n },
        (_, i) => `node-${String(i).padStart(5, "0")}`,
      );
      await forEachConcurrently(names, CONCURRENCY, async (name, i) => {
        await registerNode(cp, name, {
          providedNodeIp: `10.200.${Math.floor(i / 250)}.${(i % 250) + 1}`,
        });
      });
      await until(
        `${scenario.n} Nodes initialized`,
        () => names.every((n) => nodes.get(n)?.done),
        120_000 + scenario.n * 1000,
      );
      result.wallMs = Math.max(...names.map((n) => nodes.get(n)!.done!)) - began;
    } else if (scenario.kind === "quiet") {
      await sleep(scenario.n * 1000);
      result.wallMs = performance.now() - began;
    } else if (scenario.kind === "idle-nodes") {
      const names = Array.from(
        { length: scenario.n },
        (_, i) => `node-${String(i).padStart(5, "0")}`,
      );
      const capture = Deno.env.get("KEELSON_PEERS_CAPTURE") === "1"
        ? await startWireCapture()
        : undefined;
      for (const [i, name] of names.entries()) {
        await registerNode(cp, name, { providedNodeIp: `10.200.0.${i + 1}` });
        await sleep(scenario.everyMs);
      }
      await until(
        "every idle Node initialized",
        () => names.every((n) => nodes.get(n)?.done),
        60_000,
      );
      if (capture) result.wire = await capture.finish(running.pid);
      const s = summarize(names.map((n) => nodes.get(n)!.done! - nodes.get(n)!.added!));
      result.latency = { p50: s.p50, p99: s.p99 };
    } else {
      const names = Array.from({ length: scenario.n }, (_, i) => `idle-${i}`);
      for (const name of names) {
        await cp.requestOk("POST", `/api/v1/namespaces/${NAMESPACE}/services`, lbService(name));
        await sleep(scenario.everyMs);
      }
      await until(
        "every idle Service's ingress",
        () => names.every((n) => services.get(n)?.ingress),
        60_000,
      );
      const s = summarize(names.map((n) => services.get(n)!.ingress! - services.get(n)!.added!));
      result.latency = { p50: s.p50, p99: s.p99 };
    }
    const after = await processStats(running.pid);
    result.peakRssMb = after.peakRssMb;
    result.cpuS = after.cpuS - before.cpuS;
    return result;
  } catch (error) {
    const log = (await running?.log()) ?? "";
    throw new Error(`${String(error)}\n--- ${impl} log tail\n${log.slice(-3000)}`);
  } finally {
    const keep = Deno.env.get("KEELSON_PEERS_LOG");
    if (keep && impl === "keelson" && running) await Deno.writeTextFile(keep, await running.log());
    await running?.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/**
 * Builds (or finds) the upstream CCM.
 * @returns the binary's path
 * @throws {Error} when the build fails
 */
export async function upstreamCcm(): Promise<string> {
  const script = new URL("./build_upstream_ccm.sh", import.meta.url).pathname;
  const output = await new Deno.Command("bash", { args: [script], stderr: "inherit" }).output();
  if (!output.success) throw new Error("Cannot build the upstream cloud-controller-manager");
  return new TextDecoder().decode(output.stdout).trim();
}

/** Both, or only those named in `KEELSON_PEERS_ONLY` (e.g. `keelson`, to repeat one side). */
function implementations(): Implementation[] {
  const only = Deno.env.get("KEELSON_PEERS_ONLY");
  const all: Implementation[] = ["upstream", "keelson"];
  return only ? all.filter((impl) => only.split(",").includes(impl)) : all;
}

function ratio(a: number | undefined, b: number | undefined): string {
  if (a === undefined || b === undefined || !(b > 0)) return "";
  return `${(a / b).toFixed(2)}×`;
}

/**
 * Runs every scenario for both implementations and prints the table.
 * @param scenarios what to run (default: `DEFAULT_SCENARIOS`)
 */
export async function runPeersBench(scenarios: Scenario[] = DEFAULT_SCENARIOS): Promise<void> {
  const binary = await upstreamCcm();
  // the bundle the compiled binary runs, unless KEELSON_PEERS_SOURCE=1 asks for main.ts
  await using bundle = Deno.env.get("KEELSON_PEERS_SOURCE") === "1"
    ? undefined
    : await bundleKeelson();
  say(
    `\n== peers: upstream cloud-controller-manager (${binary}) vs keelson run (${
      bundle ? "bundle, as compiled" : "main.ts"
    })`,
  );
  say(`   QPS ${QPS} / burst ${BURST}, one worker, leader election off, fresh etcd per run`);
  const rows: string[] = [];
  const rss: string[] = [];
  const firsts: Record<Implementation, number[]> = { upstream: [], keelson: [] };
  for (const scenario of scenarios) {
    const results: Partial<Record<Implementation, RunResult>> = {};
    for (const impl of implementations()) {
      try {
        const r = await runOnce(impl, scenario, binary, bundle?.path);
        results[impl] = r;
        firsts[impl].push(r.firstObjectMs);
        say(
          `${scenarioName(scenario)}, ${impl}: ` +
            (r.wallMs !== undefined ? `wall ${duration(r.wallMs)}` : "") +
            (r.latency ? `p50 ${duration(r.latency.p50)}, p99 ${duration(r.latency.p99)}` : "") +
            `, CPU ${r.cpuS.toFixed(2)} s, peak RSS ${r.peakRssMb.toFixed(0)} MB, ` +
            `start to first object ${duration(r.firstObjectMs)}`,
        );
        if (r.wire) {
          const w = r.wire;
          say(
            `  on the wire, p50 over ${w.nodes} Nodes: watch event → PUT ${
              duration(w.reaction.p50)
            } (the agent), PUT → etcd write ${duration(w.putToEtcd.p50)}, PUT → answer ${
              duration(w.put.p50)
            } (the apiserver)`,
          );
        }
      } catch (error) {
        say(`${scenarioName(scenario)}, ${impl}: FAILED: ${String(error).slice(0, 3000)}`);
      }
    }
    const u = results.upstream, k = results.keelson;
    if (scenario.kind === "idle" || scenario.kind === "idle-nodes") {
      rows.push(
        `| ${scenarioName(scenario)}: p50 / p99 | ${
          u ? `${duration(u.latency!.p50)} / ${duration(u.latency!.p99)}` : "failed"
        } | ${k ? `${duration(k.latency!.p50)} / ${duration(k.latency!.p99)}` : "failed"} | ${
          ratio(k?.latency?.p50, u?.latency?.p50)
        } / ${ratio(k?.latency?.p99, u?.latency?.p99)} |`,
      );
    } else if (scenario.kind === "quiet") {
      const perS = (r: RunResult | undefined) =>
        r ? `${(r.cpuS * 1e6 / r.wallMs!).toFixed(2)} ms/s` : "failed";
      rows.push(
        `| ${scenarioName(scenario)}: CPU per second | ${perS(u)} | ${perS(k)} | ${
          ratio(k?.cpuS, u?.cpuS)
        } |`,
      );
    } else {
      rows.push(
        `| ${scenarioName(scenario)}: wall | ${u ? duration(u.wallMs!) : "failed"} | ${
          k ? duration(k.wallMs!) : "failed"
        } | ${ratio(k?.wallMs, u?.wallMs)} |`,
      );
      rows.push(
        `| ${scenarioName(scenario)}: CPU | ${u ? `${u.cpuS.toFixed(2)} s` : ""} | ${
          k ? `${k.cpuS.toFixed(2)} s` : ""
        } | ${ratio(k?.cpuS, u?.cpuS)} |`,
      );
    }
    rss.push(
      `| peak RSS, ${scenarioName(scenario)} | ${u ? `${u.peakRssMb.toFixed(0)} MB` : ""} | ${
        k ? `${k.peakRssMb.toFixed(0)} MB` : ""
      } | ${ratio(k?.peakRssMb, u?.peakRssMb)} |`,
    );
  }
  const median = (xs: number[]) => summarize(xs).p50;
  say("\n| work | upstream | keelson | keelson / upstream |\n|---|---|---|---|");
  for (const row of [...rows, ...rss]) say(row);
  say(
    `| start to first object done (median of ${firsts.keelson.length} runs) | ${
      duration(median(firsts.upstream))
    } | ${duration(median(firsts.keelson))} | ${
      ratio(median(firsts.keelson), median(firsts.upstream))
    } |`,
  );
}

/**
 * Parses scenario words: `services:N`, `nodes:N`, `mixed:N` (N Nodes and N Services at once),
 * `idle[:N]`, `idle-nodes[:N]`, `quiet:SECONDS`, each optionally followed by `@QPS/BURST` (default: `DEFAULT_SCENARIOS`).
 * @param words e.g. `["services:100", "idle", "mixed:5000@1000/2000"]`
 * @returns the scenarios, or an error message
 */
export function parseScenarios(words: string[]): Scenario[] | string {
  if (words.length === 0) return DEFAULT_SCENARIOS;
  const out: Scenario[] = [];
  for (const word of words) {
    const [what = "", limit] = word.split("@");
    const [qps, burst] = (limit ?? "").split("/").map(Number);
    if (limit !== undefined && !(qps! > 0 && Number.isInteger(burst) && burst! > 0)) {
      return `Invalid budget in "${word}": use @QPS/BURST, e.g. @1000/2000`;
    }
    const budget = limit === undefined ? {} : { qps: qps!, burst: burst! };
    const [kind, count] = what.split(":");
    const idle = kind === "idle" || kind === "idle-nodes";
    const n = Number(count ?? (idle ? 50 : NaN));
    if (
      (kind !== "services" && kind !== "nodes" && kind !== "mixed" && kind !== "quiet" && !idle) ||
      !(Number.isInteger(n) && n > 0)
    ) {
      return `Unknown peers scenario "${word}": use services:N, nodes:N, mixed:N, idle[:N], idle-nodes[:N] or quiet:SECONDS`;
    }
    out.push(idle ? { kind, n, everyMs: 300, ...budget } : { kind, n, ...budget });
  }
  return out;
}
