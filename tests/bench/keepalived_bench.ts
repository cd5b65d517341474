/**
 * Benchmark: keepalived with N Service VIPs (default 1000).
 *
 * 1. Building the model and rendering the text (pure; many iterations, mean per call).
 * 2. `keepalived -t` on the rendered file (when keepalived is installed).
 * 3. With root, iproute2 and keepalived: three control-plane namespaces on a bridge (the e2e lab),
 *    keepalived running with only the control-plane VIP; then the N-VIP file is written on all
 *    three and SIGHUP sent: the time until every VIP is up on exactly one namespace. Then one VIP
 *    is added through `KeepalivedApplier` (check, atomic write, SIGHUP): its time, and how many
 *    of the N VIPs moved (none should).
 *
 * Figures only: nothing is asserted. Namespaces and processes are removed by the lab, also on
 * failure and on Ctrl-C.
 *
 * @module
 */
import { Registry } from "prom-client";
import { KeepalivedApplier } from "../../providers/baremetal/keepalived/config_applier.ts";
import {
  buildKeepalivedModel,
  type KeepalivedModel,
} from "../../providers/baremetal/keepalived/model.ts";
import { SERVICE_PREEMPT_DELAY_S } from "../../providers/baremetal/keepalived/model.ts";
import { renderKeepalivedConfig } from "../../providers/baremetal/keepalived/render.ts";
import type { Config } from "../../src/config/types.ts";
import { e2eUnavailable, KeepalivedLab } from "../e2e/_keepalived_lab.ts";
import { testConfig, vipRange } from "../unit/providers/baremetal/keepalived/_inventory.ts";
import { duration, say, sleep } from "./_report.ts";

const HOSTS: Record<string, string> = { n1: "cp-1", n2: "cp-2", n3: "cp-3" };
const CP_VIP = "10.250.0.100";
/** Roughly how long the pure part may take, per measured function. */
const PURE_BUDGET_MS = 3000;

function model(config: Config, host: string, vips: readonly string[]): KeepalivedModel {
  const built = buildKeepalivedModel({
    config,
    host,
    serviceVips: vips,
    controlPlaneHealthy: true,
  });
  if ("error" in built) throw new Error(built.error);
  return built;
}

/** Mean milliseconds per call of `fn`, over as many calls as fit in the budget (min 20). */
function meanMs(fn: () => unknown): { ms: number; iterations: number } {
  for (let i = 0; i < 5; i++) fn(); // warm up the JIT
  const began = performance.now();
  let iterations = 0;
  while (iterations < 20 || performance.now() - began < PURE_BUDGET_MS) {
    fn();
    iterations++;
  }
  return { ms: (performance.now() - began) / iterations, iterations };
}

function keepalivedInstalled(): boolean {
  return ["/usr/sbin", "/usr/bin", "/sbin", "/bin"].some((dir) => {
    try {
      return Deno.statSync(`${dir}/keepalived`).isFile;
    } catch {
      return false;
    }
  });
}

/** Mean wall time of `keepalived -t -f file` (optionally inside a namespace) over `times` runs. */
async function checkMs(file: string, times: number, netns?: string): Promise<number> {
  const argv = [...(netns ? ["ip", "netns", "exec", netns] : []), "keepalived", "-t", "-f", file];
  let total = 0;
  for (let i = 0; i < times; i++) {
    const began = performance.now();
    const out = await new Deno.Command(argv[0]!, {
      args: argv.slice(1),
      stdout: "null",
      stderr: "piped",
    }).output();
    total += performance.now() - began;
    if (out.code !== 0) {
      throw new Error(
        `keepalived -t rejected ${file} (exit ${out.code}): ${
          new TextDecoder().decode(out.stderr).slice(0, 2000)
        }`,
      );
    }
  }
  return total / times;
}

/**
 * Runs the keepalived benchmark with `n` Service VIPs.
 * @param n the number of VIPs
 * @throws {Error} when keepalived rejects the rendered file or VIPs do not come up in time
 */
export async function runKeepalivedBench(n: number): Promise<void> {
  say(`\n== keepalived: ${n} Service VIPs, 3 control-plane hosts, vrid_range [100, 119]`);
  const vips = vipRange(n, 1, 1);
  const config = testConfig();
  const built = model(config, "cp-1", vips);
  const text = renderKeepalivedConfig(built);
  const build = meanMs(() => model(config, "cp-1", vips));
  const render = meanMs(() => renderKeepalivedConfig(built));
  const both = meanMs(() => renderKeepalivedConfig(model(config, "cp-1", vips)));
  const services = built.instances.filter((i) => i.kind === "service");
  say(
    `rendered: ${text.length} bytes, ${text.split("\n").length} lines, ` +
      `${services.length} Service instances (at most 20 VIPs each in virtual_ipaddress)`,
  );
  say(
    `buildKeepalivedModel: mean ${duration(build.ms)} (${build.iterations} runs); ` +
      `renderKeepalivedConfig: mean ${duration(render.ms)} (${render.iterations} runs); ` +
      `both: mean ${duration(both.ms)}`,
  );

  if (!keepalivedInstalled()) {
    say("keepalived is not installed: skipping keepalived -t and the reload");
    return;
  }
  const unavailable = e2eUnavailable();
  if (unavailable) {
    // -t checks the interface where it runs: render for loopback in the host namespace
    const dir = await Deno.makeTempDir({ prefix: "keelson-bench-ka-" });
    try {
      const lo = testConfig({ keepalived: { interface: "lo" } });
      await Deno.writeTextFile(
        `${dir}/keelson.conf`,
        renderKeepalivedConfig(model(lo, "cp-1", vips)),
      );
      say(`keepalived -t: mean ${duration(await checkMs(`${dir}/keelson.conf`, 5))} (5 runs)`);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
    say(`skipping the real reload: ${unavailable}`);
    return;
  }
  await reloadBench(n, vips);
}

async function reloadBench(n: number, vips: string[]): Promise<void> {
  const lab = await KeepalivedLab.create("bench");
  const onSignal = (): void => {
    lab.close().finally(() => Deno.exit(130));
  };
  Deno.addSignalListener("SIGINT", onSignal);
  Deno.addSignalListener("SIGTERM", onSignal);
  try {
    const renderFor = (node: string, list: readonly string[]): string =>
      renderKeepalivedConfig(
        model(
          testConfig({ keepalived: { track_file_dir: lab.nodeDir(node) } }),
          HOSTS[node]!,
          list,
        ),
      );
    await Deno.writeTextFile(lab.confFile("n1"), renderFor("n1", vips));
    const checked = await checkMs(lab.confFile("n1"), 5, lab.ns("n1"));
    say(`keepalived -t (in the namespace, ${n} VIPs): mean ${duration(checked)} (5 runs)`);

    for (const node of lab.nodes) await Deno.writeTextFile(lab.confFile(node), renderFor(node, []));
    for (const node of lab.nodes) lab.startKeepalived(node);
    await lab.waitFor(
      "the control-plane VIP",
      (h) => h.get(CP_VIP)?.length === 1,
      [CP_VIP],
      30_000,
    );
    const cpBefore = (await lab.holders([CP_VIP])).get(CP_VIP)?.join();
    for (const node of lab.nodes) {
      const temp = `${lab.confFile(node)}.tmp`;
      await Deno.writeTextFile(temp, renderFor(node, vips));
      await Deno.rename(temp, lab.confFile(node));
    }
    const pids = await Promise.all(
      lab.nodes.map(async (node) => Number((await Deno.readTextFile(lab.pidFile(node))).trim())),
    );
    const began = performance.now();
    for (const pid of pids) Deno.kill(pid, "SIGHUP");
    await lab.waitFor(
      `all ${n} VIPs up, each on one namespace`,
      (h) => [...h.values()].every((holders) => holders.length === 1),
      vips,
      120_000,
    );
    // an upper bound: the last poll (3 x `ip -j addr`) is included
    const upMs = performance.now() - began;
    let placed = await lab.holders(vips);
    const firstPerNode = lab.nodes.map((node) =>
      `${node} ${[...placed.values()].filter((h) => h[0] === node).length}`
    );
    say(`SIGHUP -> all ${n} VIPs up (each on exactly one namespace): ${duration(upMs)}`);
    say(`first placement: ${firstPerNode.join(", ")}`);
    // preempt_delay hands groups back to their preferred hosts: wait until nothing moves
    await sleep(SERVICE_PREEMPT_DELAY_S * 1000);
    for (let quiet = 0; quiet < 3;) {
      await sleep(1000);
      const now = await lab.holders(vips);
      quiet = vips.every((v) => now.get(v)?.join() === placed.get(v)?.join()) ? quiet + 1 : 0;
      placed = now;
    }
    const cpAfter = (await lab.holders([CP_VIP])).get(CP_VIP)?.join();
    const perNode = lab.nodes.map((node) =>
      `${node} ${[...placed.values()].filter((h) => h[0] === node).length}`
    );
    say(
      `settled placement: ${perNode.join(", ")}; control-plane VIP on ${cpBefore} before ` +
        `the reload, on ${cpAfter} after`,
    );

    const added = "10.250.9.9";
    const registry = new Registry();
    const applyBegan = performance.now();
    const results = await Promise.all(lab.nodes.map((node) =>
      new KeepalivedApplier({
        configFile: lab.confFile(node),
        pidFile: lab.pidFile(node),
        netns: lab.ns(node),
        debounceMs: 0,
        registry,
      }).apply(renderFor(node, [...vips, added]))
    ));
    const applyMs = performance.now() - applyBegan;
    const failures = results.filter((r) => r.result !== "success");
    if (failures.length > 0) {
      say(
        `KeepalivedApplier failed on ${failures.length} host(s): ${
          failures.map((r) => r.message).join("; ")
        }`,
      );
    } else {
      const addMs = await lab.waitFor("the added VIP", (h) => h.get(added)?.length === 1, [added]);
      await sleep(1000); // let any flap show
      const after = await lab.holders(vips);
      const moved = vips.filter((v) => after.get(v)?.join() !== placed.get(v)?.join()).length;
      say(
        `add 1 VIP to ${n} via KeepalivedApplier (keepalived -t, write, SIGHUP on 3 hosts): ` +
          `apply ${duration(applyMs)}, then VIP up after ${duration(addMs)}; ` +
          `${moved} of ${n} existing VIPs moved`,
      );
    }
    await reportStalls(lab);
  } finally {
    Deno.removeSignalListener("SIGINT", onSignal);
    Deno.removeSignalListener("SIGTERM", onSignal);
    await lab.close();
  }
}

/**
 * keepalived logs "A thread timer expired N seconds ago" when its VRRP loop ran late; a stall
 * longer than 3 advert intervals (0.6 s by default) lets a backup declare the master dead.
 */
async function reportStalls(lab: KeepalivedLab): Promise<void> {
  const parts: string[] = [];
  for (const node of lab.nodes) {
    const log = await Deno.readTextFile(`${lab.nodeDir(node)}/keepalived.log`).catch(() => "");
    const late = [...log.matchAll(/A thread timer expired ([0-9.]+) seconds ago/g)]
      .map((m) => Number(m[1]));
    const cpMaster = log.match(/\(keelson_cp_v4\) Entering MASTER STATE/g)?.length ?? 0;
    parts.push(
      `${node}: ${late.length} late timers (max ${
        late.length ? Math.max(...late).toFixed(2) : 0
      } s), ` +
        `control-plane VIP became master here ${cpMaster} time(s)`,
    );
  }
  say(`keepalived stalls: ${parts.join("; ")}`);
}
