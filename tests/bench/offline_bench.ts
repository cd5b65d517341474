/**
 * `deno run -A tests/bench/offline_bench.ts [ENTRIES] [SERVICES]`
 *
 * The offline commands on big inputs, as a user runs them (the compiled binary's program: the
 * bundle with its baked runtime flags, one process per command, so process start is included): `keelson check` on an inventory whose pool lists ENTRIES single addresses
 * (default 100000), and `keelson plan` on the example inventory with a snapshot of SERVICES
 * pending LoadBalancer Services (default 10000) and a pool big enough for them. Prints wall time
 * and peak RSS of each; asserts nothing.
 *
 * @module
 */
import { say } from "./_report.ts";
import { type Bundle, bundleKeelson, compiledProgram } from "./_bundle.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

async function time(
  bundle: Bundle,
  args: string[],
): Promise<{ seconds: number; rssMiB: number; code: number }> {
  const program = ["run", "--allow-read", "--allow-env", "--allow-sys", ...compiledProgram(bundle)];
  const started = performance.now();
  const output = await new Deno.Command("/usr/bin/time", {
    args: ["-f", "%M", Deno.execPath(), ...program, ...args],
    cwd: ROOT,
    stdout: "null",
    stderr: "piped",
  }).output().catch(async () =>
    await new Deno.Command(Deno.execPath(), {
      args: [...program, ...args],
      cwd: ROOT,
      stdout: "null",
      stderr: "piped",
    }).output()
  );
  const seconds = (performance.now() - started) / 1000;
  const lines = new TextDecoder().decode(output.stderr).trim().split("\n");
  const kib = Number(lines[lines.length - 1]);
  return { seconds, rssMiB: Number.isFinite(kib) ? kib / 1024 : NaN, code: output.code };
}

async function main(): Promise<void> {
  const entries = Number(Deno.args[0] ?? 100_000);
  const services = Number(Deno.args[1] ?? 10_000);
  await using bundle = await bundleKeelson();
  const dir = await Deno.makeTempDir({ prefix: "keelson-offline-bench-" });
  try {
    const addresses = Array.from(
      { length: entries },
      (_, i) => `  "10.${100 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}",`,
    );
    const inventory = `${dir}/big.toml`;
    await Deno.writeTextFile(
      inventory,
      `[keepalived]\nenabled = false\n\n[[pools]]\nname = "big"\naddresses = [\n${
        addresses.join("\n")
      }\n]\n\n[[machines]]\nname = "w-1"\ninternal_ips = ["10.0.0.21"]\n`,
    );
    const check = await time(bundle, ["check", "--config", inventory]);
    say(
      `check, ${entries} pool entries (${
        ((await Deno.stat(inventory)).size / 1e6).toFixed(1)
      } MB): ` +
        `${check.seconds.toFixed(2)} s, peak RSS ${
          check.rssMiB.toFixed(0)
        } MiB, exit ${check.code}`,
    );

    const example = await Deno.readTextFile(`${ROOT}deploy/examples/keelson.toml`);
    const config = `${dir}/example.toml`;
    // the example's pools hold 63 + 255 addresses: add one big enough for every Service
    await Deno.writeTextFile(
      config,
      example + `\n[[pools]]\nname = "bench"\naddresses = ["10.128.0.0/16"]\n`,
    );
    const items = Array.from({ length: services }, (_, i) => ({
      apiVersion: "v1",
      kind: "Service",
      metadata: {
        name: `s-${i}`,
        namespace: `ns-${i % 50}`,
        creationTimestamp: new Date(1_700_000_000_000 + i * 1000).toISOString(),
      },
      spec: { type: "LoadBalancer", ports: [{ port: 80, protocol: "TCP" }] },
    }));
    const state = `${dir}/state.json`;
    await Deno.writeTextFile(state, JSON.stringify({ apiVersion: "v1", kind: "List", items }));
    const plan = await time(bundle, ["plan", "--config", config, "--state", state]);
    say(
      `plan, ${services} pending Services: ${plan.seconds.toFixed(2)} s, peak RSS ` +
        `${plan.rssMiB.toFixed(0)} MiB, exit ${plan.code}`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

if (import.meta.main) await main();
