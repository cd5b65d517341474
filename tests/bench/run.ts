/**
 * `deno task bench [nodes|services|keepalived|plan|peers|all] [N ...] [--qps Q --burst B]`
 *
 * Runs the benchmarks and prints their figures. Without a name it runs all of them; without N
 * the API benchmarks run at N = 100 and N = 1000; without `--qps`/`--burst` each API run is made
 * twice, with the default client-side rate limit (QPS 20 / burst 30) and with QPS 200 / burst
 * 300, to show what the limit costs. Needs etcd and kube-apiserver (`$KUBEBUILDER_ASSETS` or
 * scripts/testbin.sh); the keepalived reload part needs root, iproute2 and keepalived.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { type ApiLimit, DEFAULT_LIMIT, RAISED_LIMIT } from "./_agent.ts";
import { say } from "./_report.ts";

const NAMES = ["nodes", "services", "keepalived", "bgp", "plan", "peers"] as const;
type BenchName = (typeof NAMES)[number];

const USAGE =
  `Usage: deno task bench [nodes|services|keepalived|bgp|memory|plan|peers|all] [N ...] [--qps Q] [--burst B]

  nodes        N kubelet-style Nodes registered at once -> time to initialized, requests/Node
  services     N LoadBalancer Services created at once -> time to ingress, requests/Service
  keepalived   model+render, keepalived -t, and a real SIGHUP reload with N VIPs (default 1000)
  bgp          model+render, bird -p, and a ToR learning N VIPs over BGP (default 1000)
  plan         keelson plan on N LoadBalancer Services (default 10000): wall, peak RSS, IPAM time
  peers        upstream cloud-controller-manager (fake provider, built with Go) vs keelson run,
               side by side; scenarios services:N nodes:N mixed:N idle[:N] idle-nodes[:N], each [@QPS/BURST]
               (default: the whole table at QPS 20 / burst 30)
  memory       peak RSS of bare imports and of keelson run with N existing Services/Nodes, and
               start to first object done (see tests/bench/memory_bench.ts for its flags)
  N            sizes (default 100 1000 for nodes/services, 1000 for keepalived)
  --qps, --burst  run only with this client-side limit (default: both 20/30 and 200/300)`;

async function main(args: string[]): Promise<number> {
  if (args[0] === "memory") {
    // its own flags (--kind, --source, --deno-flag): see tests/bench/memory_bench.ts
    return (await import("./memory_bench.ts")).runMemoryBench(args.slice(1));
  }
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      qps: { type: "string" },
      burst: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    say(USAGE);
    return 0;
  }
  const [first, ...rest] = positionals;
  const wanted: readonly BenchName[] = first === undefined || first === "all"
    ? NAMES
    : NAMES.includes(first as BenchName)
    ? [first as BenchName]
    : [];
  if (wanted.length === 0) {
    say(`Unknown benchmark "${first}": must be one of ${NAMES.join(", ")} or all\n\n${USAGE}`);
    return 2;
  }
  if (first === "peers") {
    const { parseScenarios, runPeersBench } = await import("./peers/peers_bench.ts");
    const scenarios = parseScenarios(rest);
    if (typeof scenarios === "string") {
      say(scenarios);
      return 2;
    }
    await runPeersBench(scenarios);
    return 0;
  }
  const sizes = rest.map(Number);
  if (sizes.some((n) => !Number.isInteger(n) || n < 1)) {
    say(`Invalid size in "${rest.join(" ")}": sizes must be positive whole numbers`);
    return 2;
  }
  const limits: ApiLimit[] = values.qps !== undefined || values.burst !== undefined
    ? [{
      ...(values.qps !== undefined ? { qps: Number(values.qps) } : {}),
      ...(values.burst !== undefined ? { burst: Number(values.burst) } : {}),
    }]
    : [DEFAULT_LIMIT, RAISED_LIMIT];

  say(`keelson benchmarks, ${new Date().toISOString()}, ${navigator.hardwareConcurrency} CPUs`);
  for (const name of wanted) {
    if (name === "bgp") {
      const { runBgpBench } = await import("./bgp_bench.ts");
      for (const n of sizes.length > 0 ? sizes : [1000]) await runBgpBench(n);
      continue;
    }
    if (name === "peers") {
      await (await import("./peers/peers_bench.ts")).runPeersBench();
      continue;
    }
    if (name === "plan") {
      const { runPlanBench } = await import("./plan_bench.ts");
      for (const n of sizes.length > 0 ? sizes : [10_000]) await runPlanBench(n);
      continue;
    }
    if (name === "keepalived") {
      const { runKeepalivedBench } = await import("./keepalived_bench.ts");
      for (const n of sizes.length > 0 ? sizes : [1000]) await runKeepalivedBench(n);
      continue;
    }
    const run = name === "nodes"
      ? (await import("./nodes_bench.ts")).runNodesBench
      : (await import("./services_bench.ts")).runServicesBench;
    for (const n of sizes.length > 0 ? sizes : [100, 1000]) {
      for (const limit of limits) await run(n, limit);
    }
  }
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
