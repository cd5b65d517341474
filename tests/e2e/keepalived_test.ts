/**
 * Real keepalived in network namespaces, configured by Keelson's model + render + applier.
 * Needs root, keepalived and iproute2; skipped loudly otherwise (failed with
 * KEELSON_REQUIRE_E2E=1). Prints the failover times it measures.
 *
 * @module
 */
import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { buildKeepalivedModel } from "../../providers/baremetal/keepalived/model.ts";
import { renderKeepalivedConfig } from "../../providers/baremetal/keepalived/render.ts";
import { KeepalivedApplier } from "../../providers/baremetal/keepalived/config_applier.ts";
import { observeVipRoles } from "../../providers/baremetal/keepalived/vip_roles.ts";
import { testConfig } from "../unit/providers/baremetal/keepalived/_inventory.ts";
import { e2eUnavailable, KeepalivedLab, report, run, sleep } from "./_keepalived_lab.ts";
import { holdsFor } from "../_support/poll.ts";

const unavailable = e2eUnavailable();
if (unavailable) {
  if (Deno.env.get("KEELSON_REQUIRE_E2E") === "1") {
    throw new Error(`keepalived e2e tests cannot run (${unavailable}) and KEELSON_REQUIRE_E2E=1`);
  }
  report(`SKIPPING keepalived e2e tests: ${unavailable} (set KEELSON_REQUIRE_E2E=1 to fail)`);
}
const ignore = unavailable !== undefined;

const HOSTS: Record<string, string> = { n1: "cp-1", n2: "cp-2", n3: "cp-3" };
const CP_VIP = "10.250.0.100";
/** A crashed host's VIPs move within this: 5× the 0.7 s the README gives as measured. */
const CRASH_FAILOVER_BOUND_MS = 3_500;
const SERVICE_VIPS = Array.from({ length: 8 }, (_, i) => `10.250.0.${150 + i}`);

function render(lab: KeepalivedLab, node: string, vips: string[], healthy?: boolean): string {
  const config = testConfig({ keepalived: { track_file_dir: lab.nodeDir(node) } });
  const model = buildKeepalivedModel({
    config,
    host: HOSTS[node]!,
    serviceVips: vips,
    ...(healthy === undefined ? {} : { controlPlaneHealthy: healthy }),
  });
  if ("error" in model) throw new Error(model.error);
  return renderKeepalivedConfig(model);
}

/** Every VIP on exactly one node. */
function placedOnce(holders: Map<string, string[]>): boolean {
  return [...holders.values()].every((h) => h.length === 1);
}

async function startCluster(lab: KeepalivedLab, vips: string[], healthy?: boolean) {
  for (const node of lab.nodes) {
    await Deno.writeTextFile(lab.confFile(node), render(lab, node, vips, healthy));
    await run("ip", ["netns", "exec", lab.ns(node), "keepalived", "-t", "-f", lab.confFile(node)]);
  }
  // all at once: the first one up would master every group, and preempt_delay keeps it so
  for (const node of lab.nodes) lab.startKeepalived(node);
}

function nodesHolding(holders: Map<string, string[]>): Map<string, string[]> {
  const byNode = new Map<string, string[]>();
  for (const [vip, nodes] of holders) {
    for (const n of nodes) byNode.set(n, [...(byNode.get(n) ?? []), vip]);
  }
  return byNode;
}

Deno.test({
  name: "keepalived e2e: VIPs are placed once, spread, and fail over on stop and crash",
  ignore,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const lab = await KeepalivedLab.create("a");
    try {
      const all = [CP_VIP, ...SERVICE_VIPS];
      await startCluster(lab, SERVICE_VIPS, true);
      // hosts that start a few ms apart may elect one master for everything; preempt_delay (30 s)
      // then hands each host its share back, so allow for it
      const electionMs = await lab.waitFor(
        "every VIP placed once, on at least 2 nodes",
        (h) => placedOnce(h) && nodesHolding(h).size >= 2,
        all,
        45_000,
      );
      await sleep(1500); // let the remaining preemptions finish
      const placed = await lab.holders(all);
      assert.ok(placedOnce(placed), JSON.stringify([...placed]));
      const spread = nodesHolding(placed);
      report(
        `RESULT election_ms=${electionMs.toFixed(0)} placement=${
          JSON.stringify(Object.fromEntries(spread))
        }`,
      );
      assert.ok(spread.size >= 2, "Service groups are all on one node");
      const roles = await observeVipRoles(all, { netns: lab.ns("n1"), interface: "eth0" });
      assert.deepEqual(roles.master, [...(spread.get("n1") ?? [])].sort());

      // graceful stop of the node holding the most VIPs
      const [master, moved] = [...spread].sort((a, b) => b[1].length - a[1].length)[0]!;
      lab.keepalived.get(master)!.kill("SIGTERM");
      const termMs = await lab.waitFor(
        `VIPs of ${master} to move after SIGTERM`,
        (h) => moved.every((v) => h.get(v)!.length === 1 && h.get(v)![0] !== master),
        all,
      );
      report(`RESULT sigterm_failover_ms=${termMs.toFixed(0)} from=${master} vips=${moved.length}`);
      assert.ok(termMs < 5000, `graceful failover took ${termMs.toFixed(0)} ms`);

      // crash: freeze and kill parent + VRRP child, and cut the node off the bridge
      const after = nodesHolding(await lab.holders(all));
      const [victim, itsVips] = [...after].sort((a, b) => b[1].length - a[1].length)[0]!;
      const parent = lab.keepalived.get(victim)!.pid;
      const child = await lab.vrrpPid(victim);
      const start = performance.now();
      Deno.kill(parent, "SIGSTOP");
      Deno.kill(child, "SIGSTOP");
      Deno.kill(parent, "SIGKILL");
      Deno.kill(child, "SIGKILL");
      await run("ip", ["-n", lab.ns("sw"), "link", "set", `p-${victim}`, "down"]);
      const survivor = lab.nodes.find((n) => n !== master && n !== victim)!;
      await lab.waitFor(
        `VIPs of ${victim} to move after a crash`,
        (h) => itsVips.every((v) => h.get(v)!.includes(survivor)),
        all,
      );
      const crashMs = performance.now() - start;
      report(`RESULT crash_failover_ms=${crashMs.toFixed(0)} from=${victim} to=${survivor}`);
      // README: about 0.7 s measured; 5× that bounds it on a loaded machine
      assert.ok(crashMs < CRASH_FAILOVER_BOUND_MS, `crash failover took ${crashMs.toFixed(0)} ms`);
    } finally {
      await lab.close();
    }
  },
});

Deno.test({
  name: "keepalived e2e: KeepalivedApplier adds a Service VIP without moving existing VIPs",
  ignore,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const lab = await KeepalivedLab.create("b");
    try {
      const all = [CP_VIP, ...SERVICE_VIPS];
      await startCluster(lab, SERVICE_VIPS, true);
      await lab.waitFor("initial election", placedOnce, all);
      await sleep(500); // settle
      const before = await lab.holders(all);
      const monitors = lab.nodes.map((n) => {
        const out = `${lab.nodeDir(n)}/monitor.txt`;
        lab.spawn("sh", ["-c", `exec ip -n ${lab.ns(n)} monitor address > ${out} 2>&1`]);
        return out;
      });
      await sleep(300);

      const added = "10.250.0.199";
      const registry = new Registry();
      const results = await Promise.all(lab.nodes.map((node) =>
        new KeepalivedApplier({
          configFile: lab.confFile(node),
          pidFile: lab.pidFile(node),
          netns: lab.ns(node),
          debounceMs: 0,
          registry,
        }).apply(render(lab, node, [...SERVICE_VIPS, added], true))
      ));
      assert.deepEqual(results.map((r) => [r.result, r.reloaded]), [
        ["success", true],
        ["success", true],
        ["success", true],
      ]);
      const addMs = await lab.waitFor("added VIP", (h) => h.get(added)!.length === 1, [added]);
      // a flap of any VIP fails at once
      await holdsFor("every VIP where it was, the added one once", async () => {
        const now = await lab.holders([...all, added]);
        return now.get(added)!.length === 1 &&
          all.every((vip) => JSON.stringify(now.get(vip)) === JSON.stringify(before.get(vip)));
      }, { forMs: 1000, intervalMs: 50 });
      const afterAll = await lab.holders([...all, added]);
      report(`RESULT reload_add_vip_ms=${addMs.toFixed(0)} on=${afterAll.get(added)}`);
      for (const vip of all) assert.deepEqual(afterAll.get(vip), before.get(vip), vip);
      const monitored = (await Promise.all(monitors.map((m) => Deno.readTextFile(m)))).join("");
      for (const vip of all) {
        assert.doesNotMatch(monitored, new RegExp(`Deleted.* ${vip.replaceAll(".", "\\.")}/`));
      }
      assert.match(monitored, /10\.250\.0\.199\/32/);

      // an invalid text is rejected and the file in force stays
      const invalid = await new KeepalivedApplier({
        configFile: lab.confFile("n1"),
        pidFile: lab.pidFile("n1"),
        netns: lab.ns("n1"),
        debounceMs: 0,
        registry,
      }).apply("vrrp_instance x {\n    bogus_keyword 1\n}\n");
      assert.equal(invalid.result, "invalid");
      assert.ok(invalid.checkOutput?.some((l) => /bogus_keyword/.test(l)), invalid.message);
      assert.match(await Deno.readTextFile(lab.confFile("n1")), /10\.250\.0\.199/);
    } finally {
      await lab.close();
    }
  },
});

Deno.test({
  name: "keepalived e2e: the control-plane VIP follows the apiserver probe with no Kubernetes API",
  ignore,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const lab = await KeepalivedLab.create("c");
    try {
      const server = new URL("./_fake_apiserver.py", import.meta.url).pathname;
      const prober = new URL("./_probe_main.ts", import.meta.url).pathname;
      for (const node of lab.nodes) {
        const d = lab.nodeDir(node);
        lab.spawn("ip", [
          "netns",
          "exec",
          lab.ns(node),
          "python3",
          server,
          "127.0.0.1",
          "6443",
          `${d}/fail`,
        ]);
        lab.spawn("ip", [
          "netns",
          "exec",
          lab.ns(node),
          Deno.execPath(),
          "run",
          "-A",
          "--quiet",
          prober,
          "http://127.0.0.1:6443/readyz",
          `${d}/apiserver-health`,
        ]);
      }
      // no controlPlaneHealthy: keepalived starts FAULT (init_file 1) until the probe says 0
      const start = performance.now();
      await startCluster(lab, []);
      await lab.waitFor("control-plane VIP", placedOnce, [CP_VIP], 30_000);
      report(`RESULT cp_vip_up_ms=${(performance.now() - start).toFixed(0)} (incl. prober start)`);
      const [master] = (await lab.holders([CP_VIP])).get(CP_VIP)!;
      await Deno.writeTextFile(`${lab.nodeDir(master!)}/fail`, "");
      const moveMs = await lab.waitFor(
        "control-plane VIP to leave the failing apiserver",
        (h) => h.get(CP_VIP)!.length === 1 && h.get(CP_VIP)![0] !== master,
        [CP_VIP],
      );
      report(`RESULT apiserver_fail_failover_ms=${moveMs.toFixed(0)} from=${master}`);
      assert.ok(moveMs < 8000, `control-plane VIP took ${moveMs.toFixed(0)} ms to move`);
      assert.equal(await Deno.readTextFile(`${lab.nodeDir(master!)}/apiserver-health`), "1\n");
    } finally {
      await lab.close();
    }
  },
});
