/**
 * The service controller of `keelson run` across a crash and a live pool change, against a real
 * kube-apiserver: an agent killed with SIGKILL while it allocates is replaced by a new one that
 * rebuilds IPAM from the API and gives no address twice; then the inventory file is edited to
 * grow the exhausted pool and the pending Services get addresses without a restart.
 *
 * Figures are printed with a `FIGURE` prefix.
 */
import assert from "node:assert/strict";
import type { V1Service } from "@kubernetes/client-node";
import { integrationTest, startControlPlane } from "./_harness/control_plane.ts";
import type { KeelsonProcess } from "./_harness/keelson_process.ts";
import {
  createLbService,
  createNamespace,
  figure,
  getService,
  ingressIps,
  inV4Range,
  lbInventory,
  startLeadingAgent,
  waitRefused,
} from "./_harness/lb_services.ts";
import { waitFor } from "./_harness/wait.ts";
import { IN_USE_METRIC } from "../../src/metrics/pool_usage.ts";

const NAMES = ["s1", "s2", "s3", "s4"];

const seconds = (ms: number) => (ms / 1000).toFixed(2);

async function services(cp: Parameters<typeof getService>[0]): Promise<V1Service[]> {
  const all = await Promise.all(NAMES.map((n) => getService(cp, "crash", n)));
  return all.filter((s): s is V1Service => s !== undefined);
}

integrationTest(
  "ServiceController in keelson run gives no address twice across a SIGKILL and serves a grown pool live",
  async (t) => {
    await using cp = await startControlPlane();
    const dir = await Deno.makeTempDir({ prefix: "keelson-services-crash-" });
    const configPath = `${dir}/keelson.toml`;
    const pool = (last: number) => ({ name: "tiny", addresses: [`192.0.2.1-192.0.2.${last}`] });
    await Deno.writeTextFile(configPath, lbInventory({ pools: [pool(2)] }));
    const agents: KeelsonProcess[] = [];
    try {
      await t.step(
        "a new agent after a SIGKILL mid-allocation gives no address twice",
        async () => {
          const first = await startLeadingAgent(cp, dir, configPath, "a");
          agents.push(first);
          await createNamespace(cp, "crash");
          await Promise.all(NAMES.map((name) => createLbService(cp, "crash", name)));
          // kill once one Service shows its address (one worker: the next is being allocated)
          await waitFor(
            async () => (await services(cp)).some((s) => ingressIps(s).length > 0),
            { intervalMs: 10, message: "the first agent to write an ingress" },
          );
          first.process.kill("SIGKILL");
          const killed = performance.now();
          await first.process.exited();
          const atKill = (await services(cp)).filter((s) => ingressIps(s).length > 0);
          figure(`${atKill.length} of 4 Services had ingress when the agent was killed`);

          agents.push(await startLeadingAgent(cp, dir, configPath, "b"));
          figure(
            `new agent leads ${seconds(performance.now() - killed)} s after SIGKILL (lease 4 s)`,
          );
          const settled = await waitFor(async () => {
            const all = await services(cp);
            return all.filter((s) => ingressIps(s).length > 0).length === 2 ? all : undefined;
          }, { timeoutMs: 30_000, message: "2 Services with ingress" });
          figure(`pool of 2 full ${seconds(performance.now() - killed)} s after SIGKILL`);
          const ips = settled.flatMap((s) => ingressIps(s));
          assert.equal(ips.length, 2, `one address each: ${ips.join(", ")}`);
          assert.equal(new Set(ips).size, 2, `distinct addresses: ${ips.join(", ")}`);
          for (const ip of ips) assert.ok(inV4Range(ip, "192.0.2.1", "192.0.2.2"), ip);
          const pending = settled.filter((s) => ingressIps(s).length === 0);
          assert.equal(pending.length, 2);
          for (const s of pending) {
            assert.match(
              await waitRefused(cp, "crash", s.metadata!.name!, "PoolExhausted"),
              /pool "tiny" has no free IPv4 addresses \(2 of 2 used\)/,
            );
          }
          for (const before of atKill) {
            const now = settled.find((s) => s.metadata?.uid === before.metadata?.uid);
            assert.deepEqual(ingressIps(now), ingressIps(before), "an address survives the crash");
          }
          const again = (await services(cp)).flatMap((s) => ingressIps(s));
          assert.deepEqual(again.sort(), ips.sort(), "still 2 addresses, 2 pending");
        },
      );

      await t.step("growing the pool in the file serves the pending Services live", async () => {
        const agent = agents.at(-1)!;
        const pending = (await services(cp)).filter((s) => ingressIps(s).length === 0);
        assert.equal(pending.length, 2);
        await Deno.writeTextFile(configPath, lbInventory({ pools: [pool(4)] }));
        const edited = performance.now();
        const all = await waitFor(async () => {
          const all = await services(cp);
          return all.every((s) => ingressIps(s).length === 1) ? all : undefined;
        }, { timeoutMs: 30_000, message: "every Service to have ingress after the pool grew" });
        figure(
          `pending Services got addresses ${
            seconds(performance.now() - edited)
          } s after the pool was grown in the file`,
        );
        const ips = all.flatMap((s) => ingressIps(s)).sort();
        assert.deepEqual(ips, ["192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4"]);
        assert.ok(agent.process.running, "the same agent, not restarted");
        assert.equal(await agent.metric("keelson_config_last_reload_successful"), 1);
        assert.equal(
          await agent.metric(`${IN_USE_METRIC}{pool="tiny",family="IPv4"}`),
          4,
        );
      });

      await t.step(
        "shrinking the pool under live addresses is rejected, naming the Services (MetalLB's rule)",
        async () => {
          const agent = agents.at(-1)!;
          await Deno.writeTextFile(configPath, lbInventory({ pools: [pool(2)] }));
          await waitFor(
            async () =>
              (await agent.metric("keelson_config_last_reload_successful")) === 0
                ? true
                : undefined,
            { timeoutMs: 30_000, message: "the shrinking reload to be rejected" },
          );
          const log = await agent.log();
          assert.match(log, /would strand 2 addresses/);
          // JSON lines: the quotes around the Service names are escaped
          assert.match(log, /192\.0\.2\.3 \(service \\?"crash\/[a-z0-9-]+\\?"\)/);
          assert.match(log, /192\.0\.2\.4 \(service \\?"crash\/[a-z0-9-]+\\?"\)/);
          const ips = (await services(cp)).flatMap((s) => ingressIps(s)).sort();
          assert.deepEqual(ips, ["192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4"], "kept");
          // the last good pool (4 addresses, all used) stays in force
          await createLbService(cp, "crash", "late");
          await waitRefused(cp, "crash", "late", "PoolExhausted");
          assert.deepEqual(ingressIps(await getService(cp, "crash", "late")), []);
        },
      );
    } finally {
      await Promise.all(agents.map((a) => a.stop()));
      await Deno.remove(dir, { recursive: true });
    }
  },
);
