/**
 * Benchmark: what `keelson run` costs in memory and start-up time.
 *
 * 1. Bare imports: a fresh Deno process imports one library (or the whole `run` module graph,
 *    without starting anything) and prints its peak RSS (`VmHWM`) and the import time.
 * 2. A real run: N Services (with 3 worker Nodes) or N uninitialized Nodes exist in a fresh
 *    control plane before `keelson run` starts (leader election off, as in the side-by-side run
 *    with upstream, `peers/`). Prints the time from spawning the process to the first object done and to
 *    all of them done, and the process's peak RSS (`VmHWM` of /proc/PID/status) once all are done.
 *
 * Figures only: nothing is asserted. Run: `deno task bench memory [N ...]` (default 100 1000),
 * `deno task bench memory --kind nodes 100`, or `deno run -A tests/bench/memory_bench.ts imports`.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import type { V1Node, V1Service } from "@kubernetes/client-node";
import { type ControlPlane, startControlPlane } from "../integration/_harness/control_plane.ts";
import { startKeelson } from "../integration/_harness/keelson_process.ts";
import { compiledRuntimeFlags } from "../integration/_harness/permissions.ts";
import { registerNode, UNINITIALIZED_TAINT } from "../integration/_harness/kubelet.ts";
import { duration, forEachConcurrently, say, sleep, within } from "./_report.ts";
import { startWatch } from "./_watch.ts";
import { bundleKeelson } from "./_bundle.ts";
import { processMemory } from "./_process_stats.ts";
import { nodesInventory } from "./nodes_bench.ts";
import { servicesInventory } from "./services_bench.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** What the import probes load, each in its own process. */
const IMPORT_PROBES: Array<{ name: string; specifier?: string }> = [
  { name: "nothing (deno itself)" },
  { name: "@kubernetes/client-node", specifier: "@kubernetes/client-node" },
  { name: "prom-client", specifier: "prom-client" },
  { name: "yaml", specifier: "yaml" },
  { name: "zod", specifier: "zod" },
  { name: "hono", specifier: "hono" },
  { name: "smol-toml", specifier: "smol-toml" },
  { name: "@logtape/logtape", specifier: "@logtape/logtape" },
  { name: "src/cli/run.ts (the whole run graph)", specifier: `${ROOT}src/cli/run.ts` },
];

/** Log messages that mark the start-up phases of `keelson run` (JSON log lines). */
const PHASES: Array<[string, RegExp]> = [
  ["first log line", /./],
  ["connecting", /^Connecting to /],
  [
    "controllers start",
    /^(Starting controller|Leader election is off|Successfully acquired lease)/,
  ],
  ["first object handled", /^(Initializing node|Wrote ingress)/],
];

/**
 * When each start-up phase was first logged, in ms after the process was spawned.
 * @param log the agent's JSON log
 * @param spawnedAt wall-clock ms of the spawn
 * @returns e.g. "first log line 180 ms, connecting 190 ms, ..."
 */
function startupPhases(log: string, spawnedAt: number): string {
  const lines = log.split("\n").flatMap((line) => {
    try {
      const entry = JSON.parse(line) as { "@timestamp"?: string; message?: string };
      return [{
        at: Date.parse(entry["@timestamp"] ?? "") - spawnedAt,
        message: entry.message ?? "",
      }];
    } catch {
      return [];
    }
  });
  return PHASES.map(([name, pattern]) => {
    const hit = lines.find((l) => pattern.test(l.message));
    return `${name} ${hit ? `${hit.at} ms` : "n/a"}`;
  }).join(", ");
}

/**
 * Prints the process's RSS by kind (anonymous, file) and its ten largest mappings (diagnostics,
 * when KEELSON_BENCH_SMAPS=1).
 * @param pid the process
 */
async function printMappings(pid: number): Promise<void> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  say(status.split("\n").filter((l) => /^(RssAnon|RssFile|RssShmem|Threads)/.test(l)).join(", "));
  const mappings: Array<{ name: string; what: string; rssKb: number }> = [];
  let current: { name: string; what: string; rssKb: number } | undefined;
  for (const line of (await Deno.readTextFile(`/proc/${pid}/smaps`)).split("\n")) {
    const header = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (header) {
      const sizeMb = (parseInt(header[2]!, 16) - parseInt(header[1]!, 16)) / 2 ** 20;
      current = {
        name: header[4] || "[anon]",
        what: `${header[3]} of ${sizeMb.toFixed(1)} MB ${header[4] || "[anon]"}`,
        rssKb: 0,
      };
      mappings.push(current);
    } else if (current && line.startsWith("Rss:")) {
      current.rssKb = Number(/(\d+)/.exec(line)?.[1]);
    }
  }
  const byName = new Map<string, number>();
  for (const m of mappings) byName.set(m.name, (byName.get(m.name) ?? 0) + m.rssKb);
  const top = [...byName].sort((a, b) => b[1] - a[1]).slice(0, 5);
  for (const [name, kb] of top) say(`  ${(kb / 1024).toFixed(1).padStart(7)} MB  ${name}`);
  const largest = [...mappings].sort((a, b) => b.rssKb - a.rssKb).slice(0, 8);
  for (const m of largest) say(`  ${(m.rssKb / 1024).toFixed(1).padStart(7)} MB in ${m.what}`);
  const anon = mappings.filter((m) => m.name === "[anon]");
  say(`  anonymous: ${anon.length} mappings`);
}

/**
 * Imports one module in a fresh process and reports its peak RSS and the import's wall time.
 * @param specifier what to import (resolved with the project's import map); none: empty program
 * @returns MB and ms, as measured inside the child
 */
async function probeImport(specifier: string | undefined): Promise<{ peakMb: number; ms: number }> {
  const dir = await Deno.makeTempDir({ prefix: "keelson-import-probe-" });
  try {
    const file = `${dir}/probe.ts`;
    await Deno.writeTextFile(
      file,
      `const t0 = performance.now();
${
        specifier
          ? `const m = await import(${
            JSON.stringify(specifier)
          }); (globalThis as Record<string, unknown>).keep = m;`
          : ""
      }
const ms = performance.now() - t0;
const s = Deno.readTextFileSync("/proc/self/status");
const kb = Number(/^VmHWM:\\s+(\\d+) kB/m.exec(s)?.[1]);
Deno.stdout.writeSync(new TextEncoder().encode(JSON.stringify({ peakMb: kb / 1024, ms })));
`,
    );
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", "--config", `${ROOT}deno.json`, file],
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!output.success) {
      throw new Error(`import probe failed: ${new TextDecoder().decode(output.stderr)}`);
    }
    return JSON.parse(new TextDecoder().decode(output.stdout));
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/**
 * Prints the peak RSS of each bare import (median of `runs` processes).
 * @param runs processes per probe
 */
export async function runImportProbes(runs = 3): Promise<void> {
  say("\n== bare imports: peak RSS of a fresh process (median of " + runs + ")");
  for (const probe of IMPORT_PROBES) {
    const results = [];
    for (let i = 0; i < runs; i++) results.push(await probeImport(probe.specifier));
    const median = (values: number[]) =>
      values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    say(
      `${probe.name.padEnd(40)} ${median(results.map((r) => r.peakMb)).toFixed(1).padStart(6)} MB` +
        `   import ${duration(median(results.map((r) => r.ms)))}`,
    );
  }
}

/** What one run measured. */
export interface MemoryRunResult {
  kind: "services" | "nodes";
  n: number;
  firstMs: number;
  allMs: number;
  peakMb: number;
  rssMb: number;
  cpuS: number;
}

const NAMESPACE = "bench";
const WORKERS = 3;

async function prepareServices(cp: ControlPlane, n: number): Promise<void> {
  await cp.requestOk("POST", "/api/v1/namespaces", { metadata: { name: NAMESPACE } });
  for (let i = 1; i <= WORKERS; i++) {
    await registerNode(cp, `w-${i}`, {
      providedNodeIp: `10.200.0.${i}`,
      providerID: `baremetal://w-${i}`,
      initialized: true,
    });
  }
  const names = Array.from({ length: n }, (_, i) => `svc-${String(i).padStart(5, "0")}`);
  await forEachConcurrently(names, 32, async (name) => {
    await cp.requestOk("POST", `/api/v1/namespaces/${NAMESPACE}/services`, {
      metadata: { name, labels: { app: name } },
      spec: {
        type: "LoadBalancer",
        selector: { app: name },
        ports: [{ name: "http", port: 80, targetPort: 8080, protocol: "TCP" }],
      },
    });
  });
}

async function prepareNodes(cp: ControlPlane, n: number): Promise<void> {
  const names = Array.from({ length: n }, (_, i) => `node-${String(i).padStart(5, "0")}`);
  await forEachConcurrently(names, 32, async (name, i) => {
    await registerNode(cp, name, {
      providedNodeIp: `10.200.${Math.floor(i / 250)}.${(i % 250) + 1}`,
    });
  });
}

/**
 * Starts `keelson run` against N objects that already exist; times the first and the last one
 * done and reads the process's peak RSS.
 * @param kind Services or Nodes
 * @param n how many
 * @param args extra flags for `keelson run` (e.g. the rate limit)
 * @param denoFlags flags for `deno run` instead of the compiled binary's V8 flags (e.g.
 *   `--v8-flags=...`); `["none"]` runs with V8's defaults
 * @param entry what `deno run` runs instead of main.ts (a bundle)
 * @returns the figures (also printed)
 * @throws {Error} when not every object is done in time
 */
export async function runMemoryRun(
  kind: "services" | "nodes",
  n: number,
  args: string[] = [],
  denoFlags: string[] = [],
  entry?: string,
): Promise<MemoryRunResult> {
  say(
    `\n== memory/start-up: ${n} ${kind} existing before start, ${
      [
        entry ? "bundle" : "main.ts",
        ...(denoFlags[0] === "none"
          ? ["V8 defaults"]
          : denoFlags.length
          ? denoFlags
          : compiledRuntimeFlags()),
        ...args,
      ]
        .join(" ")
    }`,
  );
  await using cp = await startControlPlane({
    apiserverArgs: kind === "services" ? ["--service-cluster-ip-range=10.96.0.0/16"] : [],
  });
  const dir = await Deno.makeTempDir({ prefix: "keelson-memory-bench-" });
  try {
    if (kind === "services") await prepareServices(cp, n);
    else await prepareNodes(cp, n);
    const configPath = `${dir}/keelson.toml`;
    await Deno.writeTextFile(
      configPath,
      kind === "services" ? servicesInventory() : nodesInventory(n),
    );

    const done = new Map<string, number>();
    let firstAt = NaN;
    let allDone: () => void = () => {};
    const finished = new Promise<void>((resolve) => allDone = resolve);
    const mark = (name: string, atMs: number) => {
      if (done.has(name)) return;
      done.set(name, atMs);
      if (done.size === 1) firstAt = atMs;
      if (done.size === n) allDone();
    };
    const path = kind === "services" ? `/api/v1/namespaces/${NAMESPACE}/services` : "/api/v1/nodes";
    await using watch = await startWatch<V1Service & V1Node>(cp, path, ({ object, atMs }) => {
      const name = object.metadata?.name ?? "";
      if (kind === "services") {
        if ((object.status?.loadBalancer?.ingress ?? []).length > 0) mark(name, atMs);
      } else {
        const tainted = (object.spec?.taints ?? []).some((t) => t.key === UNINITIALIZED_TAINT);
        if (!tainted && object.spec?.providerID) mark(name, atMs);
      }
    });

    const began = performance.now();
    const beganWall = Date.now();
    await using agent = await startKeelson({
      configPath,
      kubeconfig: cp.tokenKubeconfigPath,
      host: "bench",
      dir,
      args: ["--leader-elect=false", ...args],
      // --deno-flag=... replaces the compiled binary's runtime flags
      ...(denoFlags.length > 0 ? { runtimeFlags: denoFlags.filter((f) => f !== "none") } : {}),
      ...(entry ? { entry } : { source: true }),
      permissions: ["--allow-all"],
    });
    const pid = agent.process.pid!;
    // RSS every 100 ms: where the peak is reached (start-up, the burst, or steadily)
    const timeline: Array<[number, number]> = [];
    const sampler = setInterval(() => {
      processMemory(pid).then((m) => timeline.push([performance.now() - began, m.rssMb]))
        .catch(() => {});
    }, 100);
    const timeoutMs = 120_000 + n * 500;
    await within(
      Promise.race([finished, watch.ended]),
      timeoutMs,
      () => `Only ${done.size} of ${n} ${kind} done in ${timeoutMs} ms`,
    );
    const allAt = performance.now();
    await sleep(1000); // let trailing work (events) finish before the reading
    clearInterval(sampler);
    const memory = await processMemory(pid);
    const heap = async (name: string) => ((await agent.metric(name)) ?? NaN) / 2 ** 20;
    const result: MemoryRunResult = {
      kind,
      n,
      firstMs: firstAt - began,
      allMs: allAt - began,
      ...memory,
    };
    say(`start to first ${kind.slice(0, -1)} done: ${duration(result.firstMs)}`);
    say(`start to all ${n} done:         ${duration(result.allMs)}`);
    say(
      `peak RSS ${result.peakMb.toFixed(1)} MB, RSS now ${result.rssMb.toFixed(1)} MB, ` +
        `CPU ${result.cpuS.toFixed(2)} s`,
    );
    say(`start-up phases: ${await startupPhases(await agent.log(), beganWall)}`);
    if (Deno.env.get("KEELSON_BENCH_SMAPS") === "1") {
      await printMappings(pid);
      const marks = [0.25, 0.5, 1, 2, 4, 8, 16, 32, 64, 128].map((t) => t * 1000);
      say(
        `  RSS over time: ${
          marks.map((t) => timeline.find(([at]) => at >= t)).filter((x) => x !== undefined)
            .map(([at, mb]) => `${(at / 1000).toFixed(1)}s ${mb.toFixed(0)}`).join(", ")
        } MB`,
      );
    }
    say(
      `V8 heap used ${(await heap("deno_heap_used_bytes")).toFixed(1)} MB of ` +
        `${(await heap("deno_heap_total_bytes")).toFixed(1)} MB, external ` +
        `${(await heap("deno_external_memory_bytes")).toFixed(1)} MB`,
    );
    return result;
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/**
 * Runs the import probes and the runs.
 * @param args `[imports|run] [N ...] [--kind services|nodes|both] [--qps Q --burst B]
 *   [--deno-flag=--v8-flags=...|--deno-flag=none] [--source]` (`--deno-flag` replaces the
 *   compiled binary's runtime flags, `none`: V8's own defaults and a code cache) (`--source`:
 *   `deno run main.ts` instead of the bundle the compiled binary runs)
 * @returns exit code
 */
export async function runMemoryBench(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      kind: { type: "string", default: "both" },
      qps: { type: "string" },
      burst: { type: "string" },
      runs: { type: "string", default: "3" },
      "deno-flag": { type: "string", multiple: true, default: [] },
      source: { type: "boolean", default: false },
    },
  });
  const what = positionals[0] === "imports" || positionals[0] === "run" ? positionals.shift() : "";
  const sizes = positionals.length > 0 ? positionals.map(Number) : [100, 1000];
  const kinds = values.kind === "both" ? ["services", "nodes"] as const : [values.kind] as const;
  if (kinds.some((k) => k !== "services" && k !== "nodes")) {
    say(`Unknown --kind "${values.kind}": must be services, nodes or both`);
    return 2;
  }
  const extra = [
    ...(values.qps ? ["--kube-api-qps", values.qps] : []),
    ...(values.burst ? ["--kube-api-burst", values.burst] : []),
  ];
  if (what !== "run") await runImportProbes(Number(values.runs));
  if (what === "imports") return 0;
  // what production runs (scripts/compile.sh compiles this bundle), unless --source
  await using bundle = values.source ? undefined : await bundleKeelson();
  const entry = bundle?.path;
  // main.ts is loaded once first so every measured run finds Deno's caches (module analysis, V8
  // code cache) warm, as every start but the very first does on a host: a first, cold start
  // parses and compiles everything and costs about 30 MB more RSS (bundleKeelson warms a bundle)
  if (!entry) {
    await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", `${ROOT}main.ts`, "run", "--help"],
      cwd: ROOT,
      stdout: "null",
      stderr: "null",
    }).output();
  }
  for (const kind of kinds) {
    for (const n of sizes) {
      await runMemoryRun(kind as "services" | "nodes", n, extra, values["deno-flag"], entry);
    }
  }
  return 0;
}

if (import.meta.main) Deno.exit(await runMemoryBench(Deno.args));
