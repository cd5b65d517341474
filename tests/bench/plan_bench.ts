/**
 * Benchmark: `keelson plan` on a snapshot with N LoadBalancer Services (default 10,000) and one
 * pool large enough for all of them, twice: every Service new (each gets the lowest free address),
 * then every other one already holding an address in its status (restored, scattered over the
 * pool) and the others new. Prints
 * the whole command's wall time and peak RSS (a child process under /usr/bin/time, as an operator
 * runs it) and `planAllocations` alone, in process. Figures only: nothing is asserted.
 *
 * Run: `deno task bench plan 10000` (see tests/bench/README.md).
 *
 * @module
 */
import { ConfigSchema } from "../../src/config/schema.ts";
import { planAllocations } from "../../providers/baremetal/ipam/plan_allocations.ts";
import { formatIp } from "../../src/net/ip.ts";
import { duration, say } from "./_report.ts";
import { type Bundle, bundleKeelson, compiledProgram } from "./_bundle.ts";

/** The pool: 10.64.0.0/14, 262,142 usable addresses. */
const POOL_BASE = (10n << 24n) + (64n << 16n);

/**
 * The snapshot: N Services; with `halfHeld`, every other one holds an address at a scattered place
 * in the pool.
 * @param n the number of Services
 * @param halfHeld whether every other Service already holds an address
 * @returns the snapshot as JSON text (a `kind: List`)
 */
export function planSnapshot(n: number, halfHeld: boolean): string {
  const items = Array.from({ length: n }, (_, i) => {
    const held = halfHeld && i % 2 === 1
      ? { loadBalancer: { ingress: [{ ip: formatIp(4, POOL_BASE + 1n + BigInt(i) * 7n) }] } }
      : {};
    return {
      apiVersion: "v1",
      kind: "Service",
      metadata: {
        name: `svc-${String(i).padStart(5, "0")}`,
        namespace: `ns-${i % 50}`,
        uid: `uid-${i}`,
        creationTimestamp: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
      },
      spec: { type: "LoadBalancer", ports: [{ port: 80, protocol: "TCP" }] },
      status: held,
    };
  });
  return JSON.stringify({ apiVersion: "v1", kind: "List", items });
}

/** The inventory: one auto-assign pool and one control-plane machine. */
export const PLAN_INVENTORY = `
[cluster]
name = "bench"

[keepalived]
enabled = false

[[pools]]
name = "lan"
addresses = ["10.64.0.0/14"]

[[machines]]
name = "cp-1"
role = "control-plane"
internal_ips = ["10.0.0.11"]
`;

/**
 * Runs `keelson plan` on N Services and planAllocations alone.
 * @param n the number of Services
 */
export async function runPlanBench(n: number): Promise<void> {
  // the compiled binary's program (the bundle and its runtime flags), as operators run `plan`
  await using bundle = await bundleKeelson();
  for (const halfHeld of [false, true]) await runPlanOnce(bundle, n, halfHeld);
}

async function runPlanOnce(bundle: Bundle, n: number, halfHeld: boolean): Promise<void> {
  say(
    `\n== plan: N = ${n} LoadBalancer Services (` +
      (halfHeld ? `${n >> 1} holding an address, ${n - (n >> 1)} new)` : "all new)"),
  );
  const dir = await Deno.makeTempDir({ prefix: "keelson-plan-bench-" });
  try {
    const configPath = `${dir}/keelson.toml`;
    const statePath = `${dir}/state.json`;
    const snapshot = planSnapshot(n, halfHeld);
    await Deno.writeTextFile(configPath, PLAN_INVENTORY);
    await Deno.writeTextFile(statePath, snapshot);
    const began = performance.now();
    const output = await new Deno.Command("/usr/bin/time", {
      args: [
        "-f",
        "TIME %e s %M KB",
        Deno.execPath(),
        "run",
        "--allow-read",
        "--allow-env",
        "--allow-sys",
        ...compiledProgram(bundle),
        "plan",
        "--config",
        configPath,
        "--state",
        statePath,
        "--output",
        "json",
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const wallMs = performance.now() - began;
    const stderr = new TextDecoder().decode(output.stderr);
    const measured = /TIME ([\d.]+) s (\d+) KB/.exec(stderr);
    if (!output.success && !measured) {
      throw new Error(`keelson plan failed: ${stderr.slice(-2000)}`);
    }
    say(
      `keelson plan (child process, --output json): wall ${duration(wallMs)}, ` +
        `peak RSS ${measured ? (Number(measured[2]) / 1024).toFixed(0) : "?"} MB, ` +
        `exit ${output.code}, ${(output.stdout.length / 1e6).toFixed(1)} MB printed`,
    );

    const config = ConfigSchema.parse({
      cluster: { name: "bench" },
      keepalived: { enabled: false },
      pools: [{ name: "lan", addresses: ["10.64.0.0/14"] }],
      machines: [{ name: "cp-1", role: "control-plane", internal_ips: ["10.0.0.11"] }],
    });
    const services = JSON.parse(snapshot).items;
    const runs: number[] = [];
    let allocated = 0;
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      const plan = planAllocations(config, services);
      runs.push(performance.now() - t0);
      allocated = plan.services.filter((s) => s.outcome === "allocated").length;
    }
    say(
      `planAllocations alone: ${runs.map(duration).join(", ")} (3 runs; ${allocated} allocated, ` +
        `${n - allocated} kept)`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
