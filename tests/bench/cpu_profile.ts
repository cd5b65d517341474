/**
 * Where `keelson run`'s CPU goes: a fresh control plane, `keelson run` started with `--inspect`,
 * V8's sampling profiler (Chrome DevTools Protocol over the inspector's WebSocket) running while a
 * burst of N Services or N Nodes is handled (or one object every 300 ms), then a `.cpuprofile`
 * (open it in Chrome DevTools' Performance panel or speedscope) and the top functions by self and
 * by inclusive time, as `function file:line`. GC shows as `(garbage collector)`, time spent
 * outside JavaScript (the runtime's Rust, waiting for I/O) as `(program)` / `(idle)`.
 *
 * A tool for finding work to cut, not a test and not a benchmark table.
 *
 * ```sh
 * export KUBEBUILDER_ASSETS=/root/.cache/keelson-testbin/k8s-v1.35.4-etcd-v3.6.16
 * deno run -A tests/bench/cpu_profile.ts services 1000             # QPS 20 / burst 30
 * deno run -A tests/bench/cpu_profile.ts nodes 1000 --qps 1000 --burst 2000
 * deno run -A tests/bench/cpu_profile.ts idle-nodes 50 --out /tmp/idle.cpuprofile
 * deno run -A tests/bench/cpu_profile.ts services 1000 \
 *   --deno-flags="--v8-flags=--max-semi-space-size=2,--lite-mode" --entry /tmp/keelson.js
 * deno run -A tests/bench/cpu_profile.ts --report /tmp/x.cpuprofile  # print a saved profile's tops
 * ```
 *
 * @module
 */
import { parseArgs } from "node:util";
import type { V1Node, V1Service } from "@kubernetes/client-node";
import { startControlPlane } from "../integration/_harness/control_plane.ts";
import { startKeelson } from "../integration/_harness/keelson_process.ts";
import { registerNode, UNINITIALIZED_TAINT } from "../integration/_harness/kubelet.ts";
import { compiledRuntimeFlags } from "../integration/_harness/permissions.ts";
import { freePorts } from "../integration/_harness/process.ts";
import { forEachConcurrently, say, sleep, within } from "./_report.ts";
import { startWatch } from "./_watch.ts";
import { nodesInventory } from "./nodes_bench.ts";
import { servicesInventory } from "./services_bench.ts";
import { cpuSeconds } from "./_process_stats.ts";
import { lbService } from "./_lb_service.ts";

const NAMESPACE = "bench";
const CONCURRENCY = 32;

const USAGE =
  `Usage: deno run -A tests/bench/cpu_profile.ts services|nodes|idle|idle-nodes|quiet [N] [options]
       deno run -A tests/bench/cpu_profile.ts --report FILE.cpuprofile [--top K]

  N                 objects (default 1000; 50 for idle, idle-nodes: one every 300 ms);
                    for quiet: seconds of doing nothing (default 30), the idle cost
  --qps, --burst    keelson's client budget (default 20 / 30)
  --out FILE        where the .cpuprofile goes (default /tmp/keelson-<scenario>-<N>.cpuprofile)
  --interval US     sampling interval in microseconds (default 250)
  --top K           rows per table (default 25)
  --deno-flags="F" deno flags replacing the compiled binary's V8 flags, space-separated (with =)
  --entry FILE      the program to run instead of main.ts (e.g. a \`deno bundle\` output)`;

/** One node of a V8 `Profiler.Profile`. */
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  hitCount?: number;
  children?: number[];
}

/** V8's CPU profile (the `.cpuprofile` format). */
export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

/** Time per function, in ms. */
export interface FunctionTime {
  name: string;
  selfMs: number;
  totalMs: number;
}

function frameName(frame: ProfileNode["callFrame"]): string {
  const fn = frame.functionName || "(anonymous)";
  if (!frame.url) return fn;
  // file:// paths under the worktree, npm cache paths and ext: URLs, shortened to their tail
  const url = frame.url.replace(/^file:\/\/.*?\/(src|providers|main\.ts|node_modules)/, "$1")
    .replace(/^.*\/node_modules\/\.deno\//, "npm:");
  return `${fn} ${url}:${frame.lineNumber + 1}`;
}

/**
 * Self and inclusive time per function (recursion counted once per sample), from the samples.
 * @param profile a V8 CPU profile
 * @returns every function seen, unsorted
 */
export function functionTimes(profile: CpuProfile): FunctionTime[] {
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  const names = new Map<number, string>();
  for (const node of profile.nodes) names.set(node.id, frameName(node.callFrame));
  const times = new Map<string, FunctionTime>();
  const entry = (name: string): FunctionTime => {
    let t = times.get(name);
    if (!t) times.set(name, t = { name, selfMs: 0, totalMs: 0 });
    return t;
  };
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) {
    // a sample's time is the gap to the next one (V8's deltas are to the previous one)
    const ms = (deltas[i + 1] ?? deltas[i] ?? 0) / 1000;
    let id: number | undefined = samples[i]!;
    entry(names.get(id)!).selfMs += ms;
    const seen = new Set<string>();
    while (id !== undefined) {
      const name = names.get(id)!;
      if (!seen.has(name)) {
        seen.add(name);
        entry(name).totalMs += ms;
      }
      id = parent.get(id);
    }
  }
  return [...times.values()];
}

/**
 * Prints the top functions of a profile by self and by inclusive time.
 * @param profile the profile
 * @param top rows per table
 */
export function printTops(profile: CpuProfile, top: number): void {
  const times = functionTimes(profile);
  const wallMs = (profile.endTime - profile.startTime) / 1000;
  const busy = times.filter((t) => t.name !== "(idle)").reduce((sum, t) => sum + t.selfMs, 0);
  say(`profile: ${(wallMs / 1000).toFixed(2)} s wall, ${(busy / 1000).toFixed(2)} s not idle`);
  const table = (title: string, key: "selfMs" | "totalMs") => {
    say(`\n${title}\n     ms      %  function`);
    const rows = times.filter((t) => t.name !== "(idle)" && t.name !== "(root)")
      .sort((a, b) => b[key] - a[key]).slice(0, top);
    for (const t of rows) {
      say(
        `${t[key].toFixed(0).padStart(7)} ${
          (100 * t[key] / busy).toFixed(1).padStart(6)
        }  ${t.name}`,
      );
    }
  };
  table("top self time", "selfMs");
  table("top inclusive time", "totalMs");
}

/** A minimal Chrome DevTools Protocol session over the inspector's WebSocket. */
class Inspector {
  #socket: WebSocket;
  #next = 1;
  #pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();

  private constructor(socket: WebSocket) {
    this.#socket = socket;
    socket.onmessage = (event) => {
      const message = JSON.parse(String(event.data));
      const waiter = message.id !== undefined ? this.#pending.get(message.id) : undefined;
      if (!waiter) return;
      this.#pending.delete(message.id);
      if (message.error) waiter.reject(new Error(JSON.stringify(message.error)));
      else waiter.resolve(message.result);
    };
  }

  /** Connects to the first target of the inspector at `port`, retrying while it starts. */
  static async connect(port: number): Promise<Inspector> {
    for (let attempt = 0;; attempt++) {
      try {
        const targets = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
        const socket = new WebSocket(targets[0].webSocketDebuggerUrl);
        await new Promise((resolve, reject) => {
          socket.onopen = resolve;
          socket.onerror = () => reject(new Error("inspector WebSocket failed"));
        });
        return new Inspector(socket);
      } catch (error) {
        if (attempt > 100) throw error;
        await sleep(100);
      }
    }
  }

  send<T>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    const id = this.#next++;
    this.#socket.send(JSON.stringify({ id, method, params }));
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
    });
  }

  close(): void {
    this.#socket.close();
  }
}

function cpuSecondsOf(pid: number): number {
  return cpuSeconds(Deno.readTextFileSync(`/proc/${pid}/stat`));
}

async function profileRun(options: {
  kind: "services" | "nodes" | "idle" | "idle-nodes" | "quiet";
  n: number;
  qps: number;
  burst: number;
  out: string;
  intervalUs: number;
  top: number;
  denoFlags?: string[];
  entry?: string;
}): Promise<void> {
  const { kind, n } = options;
  await using cp = await startControlPlane({
    apiserverArgs: [
      "--service-cluster-ip-range=10.96.0.0/16",
      "--service-node-port-range=20000-32767",
    ],
  });
  await cp.requestOk("POST", "/api/v1/namespaces", { metadata: { name: NAMESPACE } });
  const withServices = kind === "services" || kind === "idle";
  for (let i = 1; i <= (withServices ? 3 : 0); i++) {
    await registerNode(cp, `w-${i}`, {
      providedNodeIp: `10.200.0.${i}`,
      providerID: `baremetal://w-${i}`,
      initialized: true,
    });
  }
  const done = new Set<string>();
  let wake = () => {};
  await using _services = await startWatch<V1Service>(
    cp,
    `/api/v1/namespaces/${NAMESPACE}/services`,
    ({ object }) => {
      if ((object.status?.loadBalancer?.ingress ?? []).length > 0) done.add(object.metadata!.name!);
      wake();
    },
  );
  await using _nodes = await startWatch<V1Node>(cp, "/api/v1/nodes", ({ object }) => {
    if (
      object.spec?.providerID &&
      !(object.spec.taints ?? []).some((t) => t.key === UNINITIALIZED_TAINT)
    ) done.add(object.metadata!.name!);
    wake();
  });
  const until = (what: string, test: () => boolean, ms: number) =>
    within(
      new Promise<void>((resolve) => {
        wake = () => test() && resolve();
        wake();
      }),
      ms,
      () => `${what} not reached in ${ms} ms`,
    );
  await cp.requestOk("POST", `/api/v1/namespaces/${NAMESPACE}/services`, lbService("first"));

  const dir = await Deno.makeTempDir({ prefix: "keelson-cpu-profile-" });
  const config = `${dir}/keelson.toml`;
  await Deno.writeTextFile(config, withServices ? servicesInventory() : nodesInventory(n));
  const [port] = freePorts(1);
  await using agent = await startKeelson({
    configPath: config,
    kubeconfig: cp.tokenKubeconfigPath,
    host: "bench",
    dir,
    runtimeFlags: [...(options.denoFlags ?? compiledRuntimeFlags()), `--inspect=127.0.0.1:${port}`],
    // a profile of what it names: main.ts unless --entry gives a bundle
    ...(options.entry ? { entry: options.entry } : { source: true }),
    permissions: ["--allow-all"],
    args: [
      "--leader-elect=false",
      `--kube-api-qps=${options.qps}`,
      `--kube-api-burst=${options.burst}`,
      "--concurrent-service-syncs=1",
      "--concurrent-node-syncs=1",
      "--log-level=warning",
    ],
  });
  const inspector = await Inspector.connect(port!);
  await until("the first Service's ingress", () => done.has("first"), 120_000);
  await sleep(1000); // start-up work settles
  await inspector.send("Profiler.enable");
  await inspector.send("Profiler.setSamplingInterval", { interval: options.intervalUs });
  const pid = agent.process.pid!;
  const cpuBefore = cpuSecondsOf(pid);
  await inspector.send("Profiler.start");
  const began = performance.now();
  const nodeName = (i: number) => `node-${String(i).padStart(5, "0")}`;
  const nodeIp = (i: number) => `10.200.${Math.floor(i / 250)}.${(i % 250) + 1}`;
  const names = Array.from(
    { length: kind === "quiet" ? 0 : n },
    (_, i) => kind === "services" ? `svc-${i}` : kind === "idle" ? `idle-${i}` : nodeName(i),
  );
  if (kind === "services") {
    await forEachConcurrently(names, CONCURRENCY, async (name) => {
      await cp.requestOk("POST", `/api/v1/namespaces/${NAMESPACE}/services`, lbService(name));
    });
  } else if (kind === "nodes") {
    await forEachConcurrently(names, CONCURRENCY, async (name, i) => {
      await registerNode(cp, name, { providedNodeIp: nodeIp(i) });
    });
  } else if (kind === "quiet") {
    await sleep(n * 1000);
  } else {
    for (const [i, name] of names.entries()) {
      if (kind === "idle") {
        await cp.requestOk("POST", `/api/v1/namespaces/${NAMESPACE}/services`, lbService(name));
      } else {
        await registerNode(cp, name, { providedNodeIp: nodeIp(i) });
      }
      await sleep(300);
    }
  }
  await until(`${n} ${kind} done`, () => names.every((name) => done.has(name)), 120_000 + n * 1000);
  const wallS = (performance.now() - began) / 1000;
  const { profile } = await inspector.send<{ profile: CpuProfile }>("Profiler.stop");
  const cpuS = cpuSecondsOf(pid) - cpuBefore;
  inspector.close();
  await Deno.writeTextFile(options.out, JSON.stringify(profile));
  await Deno.remove(dir, { recursive: true }).catch(() => {});
  say(
    `${n} ${kind} at QPS ${options.qps} / burst ${options.burst}: wall ${wallS.toFixed(2)} s, ` +
      `process CPU ${cpuS.toFixed(2)} s (the profiler's own cost included)`,
  );
  say(`profile written to ${options.out}`);
  printTops(profile, options.top);
}

async function main(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      qps: { type: "string", default: "20" },
      burst: { type: "string", default: "30" },
      out: { type: "string" },
      interval: { type: "string", default: "250" },
      top: { type: "string", default: "25" },
      "deno-flags": { type: "string" },
      entry: { type: "string" },
      report: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  const top = Number(values.top);
  if (values.help) {
    say(USAGE);
    return 0;
  }
  if (values.report) {
    printTops(JSON.parse(await Deno.readTextFile(values.report)), top);
    return 0;
  }
  const [kind, count] = positionals;
  if (
    kind !== "services" && kind !== "nodes" && kind !== "idle" && kind !== "idle-nodes" &&
    kind !== "quiet"
  ) {
    say(USAGE);
    return 2;
  }
  const idle = kind === "idle" || kind === "idle-nodes";
  const n = Number(count ?? (idle ? 50 : kind === "quiet" ? 30 : 1000));
  await profileRun({
    kind,
    n,
    qps: Number(values.qps),
    burst: Number(values.burst),
    out: values.out ?? `/tmp/keelson-${kind}-${n}.cpuprofile`,
    intervalUs: Number(values.interval),
    top,
    ...(values["deno-flags"] ? { denoFlags: values["deno-flags"].split(" ").filter(Boolean) } : {}),
    ...(values.entry ? { entry: values.entry } : {}),
  });
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
