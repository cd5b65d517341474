/**
 * Benchmark: BIRD with N VIPs in a BGP pool (default 1000).
 *
 * 1. Building the model and rendering the text (pure; many iterations, mean per call).
 * 2. `bird -p -c` on the rendered file.
 * 3. With root, iproute2 and bird2: the e2e lab with one control-plane host (`kb-*` namespaces),
 *    its BIRD Established with the ToR; then the N-VIP file goes through `BirdApplier`
 *    (`bird -p`, atomic write, `configure` over the socket): the time until the ToR's kernel has
 *    all N routes. Then one VIP is added: its time to the ToR's kernel.
 *
 * Figures only: nothing is asserted. Namespaces and processes are removed by the lab.
 *
 * @module
 */
import { Registry } from "prom-client";
import { BirdApplier } from "../../providers/baremetal/bird/config_applier.ts";
import { buildBirdModel } from "../../providers/baremetal/bird/model.ts";
import { renderBirdConfig } from "../../providers/baremetal/bird/render.ts";
import { parseConfig } from "../../src/config/parse_config.ts";
import type { Config } from "../../src/config/types.ts";
import { BgpLab, bgpLabUnavailable, CP_ASN, NET, TOR_ASN, TOR_IP } from "../e2e/_bgp_lab.ts";
import { run } from "../e2e/_keepalived_lab.ts";
import { duration, say, sleep } from "./_report.ts";

const PURE_BUDGET_MS = 3000;

function inventory(configFile: string, socket: string): Config {
  return parseConfig(
    [
      "[keepalived]\nenabled = false\n",
      `[bgp]\nasn = ${CP_ASN}\nconfig_file = "${configFile}"\nsocket = "${socket}"`,
      'families = ["ipv4"]\n',
      `[[bgp.peers]]\nname = "tor"\naddress = "${TOR_IP}"\nasn = ${TOR_ASN}\n`,
      '[[pools]]\nname = "bgp"\naddresses = ["10.200.0.0/16"]\nannounce = "bgp"\n',
      `[[machines]]\nname = "cp-1"\nrole = "control-plane"\ninternal_ips = ["${NET}.11"]\n`,
    ].join("\n"),
    "bench.toml",
  );
}

function vips(n: number): string[] {
  return Array.from(
    { length: n },
    (_, k) => `10.200.${Math.floor((k + 1) / 250)}.${(k + 1) % 250 + 1}`,
  );
}

function render(config: Config, list: string[]): string {
  const model = buildBirdModel({ config, host: "cp-1", serviceVips: list });
  if ("error" in model) throw new Error(model.error);
  return renderBirdConfig(model);
}

async function torRouteCount(lab: BgpLab): Promise<number> {
  const out = await run("ip", ["-n", lab.ns("tor"), "route", "show", "root", "10.200.0.0/16"])
    .catch(() => "");
  return out.split("\n").filter((l) => l.startsWith("10.200.")).length;
}

/**
 * Runs the benchmark with `n` VIPs and prints its figures.
 * @param n the number of VIPs
 */
export async function runBgpBench(n: number): Promise<void> {
  say(`\n== bgp: ${n} VIPs in a BGP pool ==`);
  const list = vips(n);
  const config = inventory("/tmp/unused.conf", "/tmp/unused.ctl");
  let iterations = 0;
  let text = "";
  const start = performance.now();
  while (performance.now() - start < PURE_BUDGET_MS || iterations < 3) {
    text = render(config, list);
    iterations++;
  }
  say(
    `model + render: ${
      duration((performance.now() - start) / iterations)
    } per call (${iterations} runs), ${text.length} bytes`,
  );
  const file = await Deno.makeTempFile({ suffix: ".conf" });
  try {
    await Deno.writeTextFile(file, text);
    const t0 = performance.now();
    const out = await new Deno.Command("bird", { args: ["-p", "-c", file] }).output().catch(() =>
      undefined
    );
    say(
      out
        ? `bird -p: ${duration(performance.now() - t0)} (exit ${out.code})`
        : "bird -p: bird is not installed",
    );
  } finally {
    await Deno.remove(file);
  }

  const unavailable = bgpLabUnavailable();
  if (unavailable) {
    say(`ToR convergence: skipped (${unavailable})`);
    return;
  }
  const lab = await BgpLab.create(1);
  try {
    const live = inventory(lab.birdConf(1), lab.birdSocket(1));
    const applier = new BirdApplier({
      configFile: lab.birdConf(1),
      socket: lab.birdSocket(1),
      registry: new Registry(),
    });
    const empty = await applier.apply(render(live, []));
    if (!empty.configured) throw new Error(empty.message);
    for (let i = 0; i < 200; i++) {
      if ((await lab.tor("show", "protocols")).includes("Established")) break;
      await sleep(50);
    }
    const t0 = performance.now();
    const applied = await applier.apply(render(live, list));
    const tApplied = performance.now() - t0;
    let count = 0;
    while (count < n && performance.now() - t0 < 60_000) {
      count = await torRouteCount(lab);
      if (count < n) await sleep(10);
    }
    say(
      `apply (bird -p + write + configure): ${
        duration(tApplied)
      } (${applied.result}: ${applied.message})`,
    );
    say(
      `all ${n} routes in the ToR's kernel: ${
        count === n ? duration(performance.now() - t0) : `timeout with ${count}`
      } after the apply started`,
    );
    const extra = "10.200.250.1";
    const t1 = performance.now();
    await applier.apply(render(live, [...list, extra]));
    while (performance.now() - t1 < 10_000) {
      const out = await run("ip", ["-n", lab.ns("tor"), "route", "show", extra]).catch(() => "");
      if (out.includes("via")) break;
      await sleep(5);
    }
    say(
      `one more VIP among ${n}: in the ToR's kernel ${
        duration(performance.now() - t1)
      } after the apply started`,
    );
  } finally {
    await lab.destroy();
  }
}

if (import.meta.main) await runBgpBench(Number(Deno.args[0] ?? 1000));
