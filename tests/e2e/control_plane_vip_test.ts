/**
 * `keelson run` end to end on three control-plane "hosts" (network namespaces on a bridge), with
 * no Kubernetes API at all: in each namespace a stand-in kube-apiserver serves HTTPS `/readyz`
 * on 127.0.0.1:6443, `keelson run --host cp-N` renders keepalived's file and probes the
 * stand-in, and a real keepalived runs the file. The control-plane VIP must come up on exactly
 * one host and leave a host whose apiserver starts failing within 2 s.
 *
 * Needs root, keepalived, iproute2, openssl, python3 and curl; skipped loudly otherwise (failed
 * with KEELSON_REQUIRE_E2E=1). Prints the times it measures. Each host runs Keelson as it ships
 * (`shipped_keelson.ts`: the bundle with the baked flags, unprivileged with no capability, beside
 * the root step that installs what it stages; the compiled binary itself cannot be built here,
 * denort cannot be downloaded).
 *
 * @module
 */
import assert from "node:assert/strict";
import { e2eUnavailable, KeepalivedLab, report, skipLoudly, sleep } from "./_keepalived_lab.ts";
import { waitFor } from "../integration/_harness/wait.ts";
import { holdsFor, pollUntil } from "../_support/poll.ts";

const reason = skipLoudly(
  "control-plane VIP e2e test",
  e2eUnavailable(["keepalived", "ip", "openssl", "python3", "curl"]),
);

const HOSTS: Record<string, string> = { n1: "cp-1", n2: "cp-2", n3: "cp-3" };
const CP_VIP = "10.250.0.100";
const KEELSON_LISTEN = "127.0.0.1:10258";

/** One node's inventory: the same machines everywhere, the keepalived paths in its own dir. */
function inventory(lab: KeepalivedLab, node: string): string {
  const machines = Object.values(HOSTS).map((name, i) =>
    `[[machines]]\nname = "${name}"\nrole = "control-plane"\n` +
    `internal_ips = ["10.250.0.${11 + i}"]\n`
  );
  return [
    '[cluster]\nname = "e2e"\n',
    `[server]\nlisten = "${KEELSON_LISTEN}"\n`,
    ...lab.keepalivedSettings(node),
    `[control_plane]\nvip = ["${CP_VIP}"]\nport = 6443\n`,
    ...machines,
  ].join("\n");
}

async function waitForFile(path: string, timeoutMs: number): Promise<number> {
  const isFile = () => Deno.stat(path).then((s) => s.isFile, () => false);
  return (await pollUntil(`${path} to appear`, isFile, { timeoutMs, intervalMs: 50 })).ms;
}

async function tail(path: string): Promise<string> {
  const text = await Deno.readTextFile(path).catch(() => "");
  return text.split("\n").slice(-15).join("\n");
}

Deno.test({
  name: "keelson run holds the control-plane VIP with no Kubernetes API and follows /readyz",
  ignore: reason !== undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const lab = await KeepalivedLab.create("cpv", 3, { shipped: true });
    try {
      for (const node of lab.nodes) await lab.writeInventory(node, inventory(lab, node));
      // the stand-ins answer before keelson starts, so every probe starts from a healthy apiserver
      await lab.startStandInApiservers();

      // built before the clock starts (the first call bundles main.ts)
      const commands = new Map<string, string[]>();
      for (const node of lab.nodes) {
        commands.set(node, await lab.keelsonRunCommand(node, HOSTS[node]!));
      }
      const start = performance.now();
      const keelson = new Map<string, Deno.ChildProcess>();
      for (const node of lab.nodes) keelson.set(node, lab.spawnKeelson(node, commands.get(node)!));
      // keepalived needs its file to exist when it starts: keelson writes it first
      for (const node of lab.nodes) {
        await waitForFile(lab.confFile(node), 60_000).catch(async (error) => {
          throw new Error(`${error}\n${await tail(`${lab.nodeDir(node)}/keelson.log`)}`);
        });
      }
      const filesMs = performance.now() - start;
      const rendered = await Deno.readTextFile(lab.confFile("n1"));
      assert.match(rendered, /vrrp_instance keelson_cp_v4 \{/);
      assert.match(rendered, new RegExp(`file "${lab.trackDir("n1")}/apiserver-health"`));
      const keepalivedStart = performance.now();
      for (const node of lab.nodes) lab.startKeepalived(node);

      await lab.waitFor(
        "the control-plane VIP on exactly one node",
        (h) => h.get(CP_VIP)!.length === 1,
        [CP_VIP],
        30_000,
      ).catch(async (error) => {
        throw new Error(`${error}\n${await tail(`${lab.nodeDir("n1")}/keelson.log`)}`);
      });
      report(
        `RESULT cp_vip_up_ms=${(performance.now() - start).toFixed(0)} from keelson start ` +
          `(config files after ${filesMs.toFixed(0)} ms; ` +
          `VIP ${(performance.now() - keepalivedStart).toFixed(0)} ms after keepalived start)`,
      );
      await holdsFor(
        "one holder of the control-plane VIP",
        async () => (await lab.holders([CP_VIP])).get(CP_VIP)!.length === 1,
        { forMs: 1000, intervalMs: 50 },
      );
      const [master] = (await lab.holders([CP_VIP])).get(CP_VIP)!;
      assert.ok(master, "nobody holds the VIP");
      assert.deepEqual((await lab.holders([CP_VIP])).get(CP_VIP), [master]);
      // every probe reports its healthy apiserver: after `rise` successes in a row, which on a
      // loaded machine may come after the VIP is up (a slow first probe counts as a failure)
      for (const node of lab.nodes) {
        const path = `${lab.trackDir(node)}/apiserver-health`;
        await waitFor(async () => (await Deno.readTextFile(path)) === "0\n", {
          timeoutMs: 20_000,
          message: `${node}'s track file to read 0 (healthy)`,
        }).catch(async (error) => {
          throw new Error(`${error}; it reads ${JSON.stringify(await Deno.readTextFile(path))}`);
        });
      }

      // keelson's own health and metrics answer inside the namespace, with no Kubernetes API
      for (const node of lab.nodes) {
        const healthz = await lab.inNamespace(node, [
          "curl",
          "-sS",
          "-m",
          "5",
          `http://${KEELSON_LISTEN}/healthz`,
        ]);
        assert.equal(healthz.trim(), "ok", `${node} /healthz`);
        const metrics = await lab.inNamespace(node, [
          "curl",
          "-sS",
          "-m",
          "5",
          `http://${KEELSON_LISTEN}/metrics`,
        ]);
        const match = metrics.match(
          /^keelson_keepalived_reloads_total\{result="success"\} (\d+)/m,
        );
        assert.ok(match && Number(match[1]) >= 1, `${node} reloads_total:\n${metrics}`);
      }

      // the master's apiserver starts failing: its keelson writes 1, keepalived goes FAULT
      const healthFile = `${lab.trackDir(master)}/apiserver-health`;
      // at a random point of the probe period, so runs sample the whole range of detection times
      await sleep(Math.random() * 1000);
      const failAt = performance.now();
      await Deno.writeTextFile(`${lab.nodeDir(master)}/fail`, "");
      let trackMs: number | undefined;
      let moveMs = 0;
      let seen: string[] = [];
      const { value: holders } = await pollUntil("the VIP to move", async () => {
        if (trackMs === undefined && (await Deno.readTextFile(healthFile)) === "1\n") {
          trackMs = performance.now() - failAt;
        }
        seen = (await lab.holders([CP_VIP])).get(CP_VIP)!;
        moveMs = performance.now() - failAt;
        return seen.length === 1 && seen[0] !== master ? seen : undefined;
      }, {
        timeoutMs: 15_000,
        intervalMs: 10,
        context: () => `the VIP stayed on ${seen.join(",")}`,
      });
      trackMs ??= moveMs;
      report(
        `RESULT apiserver_500_failover_ms=${moveMs.toFixed(0)} from=${master} to=${holders[0]} ` +
          `(keelson probe wrote 1 after ${trackMs.toFixed(0)} ms, keepalived moved the VIP ` +
          `${(moveMs - trackMs).toFixed(0)} ms later)`,
      );
      assert.ok(moveMs < 8000, `the control-plane VIP took ${moveMs.toFixed(0)} ms to move`);
      assert.equal(await Deno.readTextFile(healthFile), "1\n");

      // restored: keelson writes 0 again; with nopreempt the VIP may stay on the successor
      await Deno.remove(`${lab.nodeDir(master)}/fail`);
      const restoreAt = performance.now();
      const healthy = async () => (await Deno.readTextFile(healthFile)) === "0\n";
      await pollUntil(`${healthFile} to say 0`, healthy, { timeoutMs: 10_000, intervalMs: 50 });
      const healthyMs = performance.now() - restoreAt;
      await sleep(3000); // longer than a master-down interval: any move back would have happened
      const after = (await lab.holders([CP_VIP])).get(CP_VIP)!;
      report(
        `RESULT apiserver_restored healthy_after_ms=${healthyMs.toFixed(0)} ` +
          `holder=${after.join(",")} (${after[0] === master ? "moved back" : "stayed put"})`,
      );
      assert.equal(after.length, 1, `holders after restore: ${after.join(",")}`);

      // an inventory edit reaches keepalived through keelson's reload: -t, rename, SIGHUP
      const reloadAt = performance.now();
      for (const node of lab.nodes) {
        const file = `${lab.nodeDir(node)}/keelson.toml`;
        const text = await Deno.readTextFile(file);
        await Deno.writeTextFile(
          file,
          text.replace("[keepalived]\n", "[keepalived]\ngarp_master_refresh = 30\n"),
        );
      }
      for (const node of lab.nodes) {
        const reloaded = async () => {
          const log = await Deno.readTextFile(`${lab.nodeDir(node)}/keepalived.log`);
          const conf = await Deno.readTextFile(lab.confFile(node));
          return /garp_master_refresh 30/.test(conf) && /Reloading/.test(log);
        };
        await pollUntil(`${node}: keepalived reloaded`, reloaded, {
          timeoutMs: Math.max(0, 15_000 - (performance.now() - reloadAt)),
          intervalMs: 50,
          context: () => tail(`${lab.nodeDir(node)}/keelson.log`),
        });
        // keelson logs "SIGHUP sent to" after the signal; keepalived may log "Reloading" first
        const keelsonLog = () => Deno.readTextFile(`${lab.nodeDir(node)}/keelson.log`);
        await pollUntil(
          `${node} to signal keepalived`,
          async () => /SIGHUP sent to \d+/.test(await keelsonLog()),
          {
            timeoutMs: 10_000,
            intervalMs: 50,
            context: async () => (await keelsonLog()).slice(-2000),
          },
        );
      }
      report(
        `RESULT inventory_edit_to_keepalived_reload_ms=${
          (performance.now() - reloadAt).toFixed(0)
        }`,
      );
      await holdsFor(
        "the VIP where it was through the reload",
        async () =>
          JSON.stringify((await lab.holders([CP_VIP])).get(CP_VIP)) === JSON.stringify(after),
        { forMs: 1000, intervalMs: 50 },
      );

      // SIGTERM stops keelson cleanly although it never reached a Kubernetes API
      for (const [node, child] of keelson) {
        child.kill("SIGTERM");
        const status = await child.status;
        const logFile = `${lab.nodeDir(node)}/keelson.log`;
        const log = await Deno.readTextFile(logFile);
        assert.equal(
          status.code,
          0,
          `${node}'s keelson exited ${status.code}:\n${await tail(logFile)}`,
        );
        assert.doesNotMatch(log, /Uncaught/);
      }
    } finally {
      await lab.close();
    }
  },
});
