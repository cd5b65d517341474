/**
 * BGP end to end: a reload that removes `[bgp]` withdraws what the host announced. A ToR BIRD and
 * one control-plane host (its own BIRD and `keelson run`) in `kw-*` network namespaces, against a
 * real kube-apiserver:
 * - the host announces a Service VIP, the control-plane VIP and a Node's pod CIDR;
 * - the inventory loses `[bgp]` (its pool and the control-plane VIP switched to VRRP) and is
 *   reloaded: every route leaves the ToR, the session stays up, the log says what happened and that
 *   a restart is still needed, the metrics and `keelson status` claim no route, and the route
 *   controller leaves the Node's condition alone;
 * - `[bgp]` back by another reload: every route returns over the same session.
 * Prints the figures (reload to routes gone, to routes back).
 *
 * Keelson runs as it ships (`shipped_keelson.ts`: the bundle with the baked flags, unprivileged with
 * no capability, beside the root step that installs what it stages; the compiled binary itself
 * cannot be built here, denort cannot be downloaded).
 *
 * Needs root, bird2, iproute2 and the kube-apiserver test binaries; skipped loudly otherwise
 * (failed with KEELSON_REQUIRE_E2E=1).
 *
 * @module
 */
import assert from "node:assert/strict";
import type { ClusterStatus } from "../../src/status/cluster_status.ts";
import { type ControlPlane, startControlPlane } from "../integration/_harness/control_plane.ts";
import type { KeelsonProcess } from "../integration/_harness/keelson_process.ts";
import { keelsonCommand } from "../integration/_harness/shipped_keelson.ts";
import { timedWait } from "../integration/_harness/wait.ts";
import {
  bgpClusterUnavailable,
  BgpLab,
  CLUSTER_CIDR,
  createWebService,
  NET,
  peerSettings,
  POD_CIDR,
  registerPodWorker,
  sameSession,
  TOR_IP,
  WORKER_IP,
  workerNetworkCondition,
} from "./_bgp_lab.ts";
import { report, skipLoudly } from "./_keepalived_lab.ts";

const reason = skipLoudly("BGP withdraw e2e test", await bgpClusterUnavailable());

const POOL = "198.51.100.0/28";
const CP_VIP = `${NET}.100`;
/** Generous: the withdrawal takes milliseconds on an idle machine. */
const WITHDRAW_BOUND_MS = 30_000;
/** For what waits on a heartbeat (renewed every 5 s), a route controller pass (10 s) or a CLI. */
const SLOW_BOUND_MS = 60_000;

/** The inventory with `[bgp]`, or without it (its pool and the control-plane VIP on VRRP). */
function inventory(lab: BgpLab, apiserverPort: string, bgp: boolean): string {
  const announce = bgp ? "bgp" : "vrrp";
  return [
    `[cluster]\nname = "e2e"\ncluster_cidr = ["${CLUSTER_CIDR}"]\n`,
    `[control_plane]\nvip = ["${CP_VIP}"]\nannounce = "${announce}"\nport = ${apiserverPort}\n`,
    ...lab.hostSettings(1),
    ...(bgp ? [...lab.bgpSettings(1), ...peerSettings("tor", TOR_IP, { podCidrs: true })] : []),
    `[[pools]]\nname = "lb"\naddresses = ["${POOL}"]\nannounce = "${announce}"\n`,
    `[[machines]]\nname = "cp-1"\nrole = "control-plane"\ninternal_ips = ["${lab.cpIp(1)}"]\n`,
    `[[machines]]\nname = "w-1"\ninternal_ips = ["${WORKER_IP}"]\n`,
  ].join("\n");
}

/** `keelson status -o json` as a user runs it (the shipped program). */
async function statusCli(kubeconfig: string): Promise<ClusterStatus> {
  const [executable, ...args] = await keelsonCommand([
    "status",
    "--kubeconfig",
    kubeconfig,
    "-o",
    "json",
  ]);
  const out = await new Deno.Command(executable!, {
    args,
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  if (out.code !== 0 && out.code !== 3) {
    throw new Error(`keelson status exited ${out.code}: ${new TextDecoder().decode(out.stderr)}`);
  }
  return JSON.parse(new TextDecoder().decode(out.stdout)) as ClusterStatus;
}

const seconds = (ms: number) => (ms / 1000).toFixed(3);

Deno.test({
  name: "BGP e2e: a reload removing [bgp] withdraws the VIPs and pod routes at the ToR; [bgp] back",
  ignore: reason !== undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const lab = await BgpLab.create(1, Deno.env.get("KEELSON_BGP_LAB_PREFIX") ?? "kw");
    let cp: ControlPlane | undefined;
    let agent: KeelsonProcess | undefined;
    try {
      cp = await startControlPlane();
      const cpRef = cp;
      const port = new URL(cp.server).port;
      const text = inventory(lab, port, true);
      agent = await lab.startKeelson(1, cp, text, "cp-1", ["--controllers", "*"]);
      const keelson = agent;
      const path = lab.inventoryPath(1);

      // --- announcing: the Service VIP, the control-plane VIP and the pod CIDR at the ToR
      const vip = await createWebService(cp);
      await registerPodWorker(cp);
      const prefixes = [vip, CP_VIP, POD_CIDR];
      const torRoutes = async () => {
        const found: string[] = [];
        for (const p of prefixes) if ((await lab.torNextHops(p)).length > 0) found.push(p);
        return found;
      };
      await timedWait(
        "the VIP, the control-plane VIP and the pod CIDR at the ToR",
        async () => (await torRoutes()).length === prefixes.length ? true : undefined,
        60_000,
        50,
      );
      assert.deepEqual(await lab.torNextHops(POD_CIDR), [WORKER_IP]);
      const nodeCondition = () => workerNetworkCondition(cpRef);
      await timedWait(
        "NetworkUnavailable=False/RouteCreated",
        async () => (await nodeCondition())?.reason === "RouteCreated" ? true : undefined,
        30_000,
        100,
      );
      const sinceBefore = (await lab.torSessionsSince()).get("cp1");
      assert.ok(sinceBefore !== undefined, "cp1's session is up");
      // keelson status: cp-1 holds both VIPs over BGP, as its heartbeat's announcements say
      const holdingBoth = await timedWait(
        "keelson status to show cp-1 holding both VIPs",
        async () => {
          const s = await statusCli(cpRef.tokenKubeconfigPath);
          const rows = s.vips.filter((v) => v.vip === vip || v.vip === CP_VIP);
          // a report written before the poll that saw the session up may still say failed
          return rows.length === 2 && rows.every((r) => r.states.some((x) => x.state === "holding"))
            ? rows
            : undefined;
        },
        SLOW_BOUND_MS,
        500,
      );
      for (const r of holdingBoth.value) {
        assert.deepEqual(r.states.map((x) => [x.host, x.state]), [["cp-1", "holding"]], r.vip);
        assert.deepEqual(r.bgpHosts, ["cp-1"], r.vip);
        assert.equal(r.problem, undefined, r.vip);
      }

      // --- the reload without [bgp]: every route leaves the ToR, its BIRD table included
      const removedAt = performance.now();
      await keelson.reload(path, inventory(lab, port, false));
      const gone = await timedWait(
        "every route of cp1 to leave the ToR",
        async () => {
          if ((await torRoutes()).length > 0) return undefined;
          const table = await lab.tor("show", "route", "protocol", "cp1");
          return /\d+\.\d+\.\d+\.\d+\/\d+/.test(table) ? undefined : table;
        },
        WITHDRAW_BOUND_MS,
        10,
      );
      report(
        `FIGURE bgp reload removing [bgp]: the VIP, the control-plane VIP and the pod CIDR gone ` +
          `from the ToR (kernel and BIRD) ${seconds(gone.ms)} s after the reload`,
      );
      assert.ok(
        sameSession((await lab.torSessionsSince()).get("cp1"), sinceBefore),
        "the session stays up (routes withdrawn by UPDATE, no Cease)",
      );
      // the log: what happened, and that a restart is still needed
      const log = await timedWait(
        "the withdrawal in the log",
        async () => {
          const text = await keelson.log();
          return text.includes("[bgp] is no longer in the configuration") ? text : undefined;
        },
        WITHDRAW_BOUND_MS,
        100,
      );
      assert.match(log.value, /withdrew every route BIRD announced from here/);
      assert.match(log.value, /Restart keelson to apply the new setting/);
      assert.match(log.value, /BIRD on this host \(\[bgp\], machine role\) true -> false/);
      // the metrics claim no route; the session is really up and exports nothing
      await timedWait(
        "keelson_bgp_* to show no route",
        async () =>
          await keelson.metric(`keelson_bgp_vip_announced{vip="${vip}"}`) === undefined &&
            await keelson.metric('keelson_bgp_routes_exported{peer="tor"}') === 0
            ? true
            : undefined,
        WITHDRAW_BOUND_MS,
        100,
      );
      assert.equal(await keelson.metric('keelson_bgp_session_up{peer="tor"}'), 1);
      assert.equal(await keelson.metric("keelson_config_restart_required"), 1);
      assert.equal(await keelson.metric("keelson_bgp_last_configure_success"), 1);
      // keelson status: no host announces the VIPs, the host's session carries no route
      const status = await timedWait(
        "keelson status to show no BGP route",
        async () => {
          const s = await statusCli(cpRef.tokenKubeconfigPath);
          const host = s.hosts.find((h) => h.host === "cp-1");
          const rows = s.vips.filter((v) => v.vip === vip || v.vip === CP_VIP);
          // a report from before the session came up also shows no route: wait for "up"
          const tor = host?.bgp?.[0];
          return tor?.established && tor.routes === 0 && rows.every((r) => r.bgpHosts.length === 0)
            ? s
            : undefined;
        },
        SLOW_BOUND_MS,
        500,
      );
      const host = status.value.hosts.find((h) => h.host === "cp-1")!;
      assert.deepEqual(host.bgp, [{ peer: "tor", established: true, routes: 0 }]);
      // BIRD announces neither VIP any more: no state of either is left holding
      for (const r of status.value.vips.filter((v) => v.vip === vip || v.vip === CP_VIP)) {
        assert.deepEqual(r.states, [], r.vip);
      }
      assert.ok(host.reload?.restart?.includes("BIRD on this host ([bgp], machine role)"));
      // the route controller (read only at start) ran a pass, failed it, and judged no Node
      await timedWait(
        "a route controller pass after the removal",
        async () =>
          (await keelson.metric('route_controller_route_sync_total{result="error"}') ?? 0) > 0
            ? true
            : undefined,
        SLOW_BOUND_MS,
        200,
      );
      assert.equal((await nodeCondition())?.reason, "RouteCreated", "no Node tainted");
      report(
        `FIGURE bgp after the removal: withdrawal logged, restart required 1, ` +
          `routes_exported 0, no keelson_bgp_vip_announced series, status tor=up(0) ` +
          `(${seconds(performance.now() - removedAt)} s after the reload)`,
      );

      // --- [bgp] back with the same values: every route returns over the same session
      await keelson.reload(path, inventory(lab, port, true));
      const back = await timedWait(
        "every route back at the ToR",
        async () => (await torRoutes()).length === prefixes.length ? true : undefined,
        WITHDRAW_BOUND_MS,
        10,
      );
      report(
        `FIGURE bgp reload with [bgp] back: the three routes at the ToR again ${
          seconds(back.ms)
        } s after the reload`,
      );
      assert.ok(
        sameSession((await lab.torSessionsSince()).get("cp1"), sinceBefore),
        "the same session carries them",
      );
      await timedWait(
        "the restart-required gauge back to 0",
        async () =>
          await keelson.metric("keelson_config_restart_required") === 0 ? true : undefined,
        WITHDRAW_BOUND_MS,
        100,
      );
      // the line follows BIRD's answer, which the ToR's routes may beat: wait for it
      await timedWait(
        "the log to say [bgp] is back",
        async () =>
          /\[bgp\] is back in the configuration: announcing again/.test(await keelson.log())
            ? true
            : undefined,
        WITHDRAW_BOUND_MS,
        100,
      );
    } catch (error) {
      if (agent) report(`--- ${agent.process.logPath}\n${(await agent.log()).slice(-4000)}`);
      report(`--- ToR\n${await lab.tor("show", "protocols", "all").catch(() => "")}`);
      throw error;
    } finally {
      await agent?.stop(10_000).catch(() => {});
      await cp?.[Symbol.asyncDispose]().catch(() => {});
      await lab.destroy();
    }
  },
});
