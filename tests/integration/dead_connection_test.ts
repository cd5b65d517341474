/**
 * A dead path to the apiserver (every open connection silent: no FIN, no RST, the peer swallows
 * what it gets, the way a powered-off host or a moved control-plane VIP looks) is noticed and
 * replaced: `keelson run` reaches the apiserver through a TCP proxy that silences every open
 * connection while it forwards new ones.
 *
 * - a LoadBalancer Service created after the silence gets its address within 15 s (upstream's
 *   cloud-controller-manager: 43 s; Keelson before: 508 s);
 * - a request in flight when the silence falls fails (at the latest at its deadline), its work is
 *   retried and the Service gets its address (Keelson before: never);
 * - nothing is allocated twice;
 * - SIGTERM while every connection is silent still stops at once.
 *
 * Figures (seconds to notice, to re-watch, to address) are printed with a `FIGURE` prefix.
 */
import assert from "node:assert/strict";
import type { V1Service } from "@kubernetes/client-node";
import { integrationTest, startControlPlane } from "./_harness/control_plane.ts";
import { writeKubeconfig } from "./_harness/kubeconfig.ts";
import { startKeelson } from "./_harness/keelson_process.ts";
import { waitFor } from "./_harness/kubelet.ts";
import {
  createLbService,
  createNamespace,
  eventsOf,
  figure,
  ingressIps,
  lbInventory,
  waitIngress,
} from "./_harness/lb_services.ts";
import { startTcpProxy } from "./_harness/tcp_proxy.ts";

const NAMESPACE = "dead-path";
/** A third of upstream's 43 s (client-go's HTTP/2 ping after 30 s idle plus 15 s). */
const ADDRESS_BOUND_MS = 15_000;
/** The request deadline (30 s) plus a retry, for the Service whose request was in flight. */
const IN_FLIGHT_BOUND_MS = 40_000;

interface LogLine {
  "@timestamp": string;
  message: string;
}

/** Log lines at or after `since` (wall clock ms) whose message matches. */
async function logLines(log: string, since: number, match: RegExp): Promise<LogLine[]> {
  return await Promise.resolve(
    log.split("\n").flatMap((line) => {
      try {
        const parsed = JSON.parse(line) as LogLine;
        return Date.parse(parsed["@timestamp"]) >= since && match.test(parsed.message)
          ? [parsed]
          : [];
      } catch {
        return [];
      }
    }),
  );
}

const seconds = (ms: number) => (ms / 1000).toFixed(2);

integrationTest(
  "a silent apiserver connection is replaced: LoadBalancer Services are addressed within 15 s, in-flight work is retried, nothing allocated twice",
  async () => {
    await using cp = await startControlPlane();
    await using proxy = startTcpProxy(Number(new URL(cp.server).port));
    const dir = await Deno.makeTempDir({ prefix: "keelson-dead-path-" });
    const kubeconfig = `${dir}/proxy.kubeconfig`;
    await writeKubeconfig(kubeconfig, `https://127.0.0.1:${proxy.port}`, cp.caPem, "admin", {
      token: cp.adminToken,
    });
    const configPath = `${dir}/keelson.toml`;
    await Deno.writeTextFile(
      configPath,
      lbInventory({ pools: [{ name: "lan", addresses: ["192.0.2.0/28"] }] }),
    );
    await createNamespace(cp, NAMESPACE);
    const agent = await startKeelson({
      configPath,
      kubeconfig,
      dir,
      args: ["--leader-elect=false", "--controllers=service"],
    });
    try {
      await waitFor(async () => (await agent.get("/readyz"))?.status === 200, {
        timeoutMs: 60_000,
        message: "readyz",
      });
      await createLbService(cp, NAMESPACE, "before");
      await waitIngress(cp, NAMESPACE, "before");

      // 1. every open connection goes silent; then a new Service
      const silencedWall = Date.now();
      const silenced = proxy.silence();
      assert.ok(silenced >= 1, "the agent had a connection open");
      await createLbService(cp, NAMESPACE, "after-silence");
      const after = await waitIngress(cp, NAMESPACE, "after-silence", 60_000);
      const log = await agent.log();
      const replaced = await logLines(log, silencedWall, /Replacing the connection/);
      const rewatched = await logLines(log, silencedWall, /Watch of .* failed, retrying in 0 ms/);
      const notice = replaced[0] ? Date.parse(replaced[0]["@timestamp"]) - silencedWall : NaN;
      const rewatch = rewatched.length
        ? Math.max(...rewatched.map((l) => Date.parse(l["@timestamp"]))) - silencedWall
        : NaN;
      figure(
        `silence of ${silenced} connection(s): noticed after ${seconds(notice)} s, watches ` +
          `re-established after ${seconds(rewatch)} s, new Service addressed after ` +
          `${seconds(after.ms)} s`,
      );
      assert.ok(replaced.length >= 1, "the dead connection was replaced (log)");
      assert.ok(after.ms < ADDRESS_BOUND_MS, `addressed after ${seconds(after.ms)} s`);
      const metrics = (await agent.get("/metrics"))?.body ?? "";
      assert.match(
        metrics,
        /keelson_kube_connection_replacements_total\{reason="ping-timeout"\} [1-9]/,
      );

      // 2. the silence falls while the agent sends its first bytes about a new Service
      proxy.silenceOnNextRequest();
      const createdAt = Date.now();
      await createLbService(cp, NAMESPACE, "in-flight");
      const inFlight = await waitIngress(cp, NAMESPACE, "in-flight", 90_000);
      const failures = (await eventsOf(cp, NAMESPACE, "in-flight"))
        .filter((e) => e.reason === "SyncLoadBalancerFailed");
      const replacedAgain = await logLines(
        await agent.log(),
        createdAt,
        /Replacing the connection/,
      );
      figure(
        `silence during the first request: connection replaced after ` +
          `${
            seconds(
              replacedAgain[0] ? Date.parse(replacedAgain[0]["@timestamp"]) - createdAt : NaN,
            )
          } s, Service addressed after ${seconds(inFlight.ms)} s ` +
          `(${failures.length} failed sync(s) retried: ${failures[0]?.message ?? "none"})`,
      );
      assert.ok(replacedAgain.length >= 1, "the connection was replaced again");
      assert.ok(inFlight.ms < IN_FLIGHT_BOUND_MS, `addressed after ${seconds(inFlight.ms)} s`);

      // 3. nothing allocated twice
      const list = await cp.requestOk<{ items: V1Service[] }>(
        "GET",
        `/api/v1/namespaces/${NAMESPACE}/services`,
      );
      const ips = list.items.map((s) => ingressIps(s));
      for (const [i, service] of list.items.entries()) {
        assert.equal(ips[i]!.length, 1, `${service.metadata?.name} has one address`);
      }
      assert.equal(new Set(ips.flat()).size, list.items.length, `distinct: ${ips.flat()}`);

      // 4. SIGTERM while every connection is silent: the stop does not wait for the dead path
      proxy.silence();
      await createLbService(cp, NAMESPACE, "at-stop");
      const pid = agent.process.pid!;
      const stopBegan = performance.now();
      Deno.kill(pid, "SIGTERM");
      const status = await Promise.race([
        agent.process.exited(),
        new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 30_000)),
      ]);
      const stopMs = performance.now() - stopBegan;
      figure(`SIGTERM on a silent connection: exited ${status?.code} after ${seconds(stopMs)} s`);
      assert.equal(status?.code, 0, "stopped cleanly");
      assert.ok(stopMs < 20_000, "within the unit's TimeoutStopSec");
    } catch (error) {
      throw new Error(`${error}\n--- agent log tail\n${(await agent.log()).slice(-4000)}`);
    } finally {
      await agent.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
);
