/**
 * BGP end to end: reloads leave nothing stale at the ToR and withdraw nothing still wanted. A ToR
 * BIRD and one control-plane host (its own BIRD and `keelson run`) in network namespaces (`kr-*`, or
 * `KEELSON_BGP_LAB_PREFIX`), against one real kube-apiserver for both steps. The host announces a
 * Service VIP, the control-plane VIP and a Node's pod CIDR; then:
 *
 * 1. `[bgp]` removed at a reload (its pool and the control-plane VIP switched to VRRP): every route
 *    leaves the ToR, the session stays up, the log says what happened and that a restart is still
 *    needed, the metrics and `keelson status` claim no route, and the route controller leaves the
 *    Node's condition alone; `[bgp]` back by another reload: every route returns over the same
 *    session, and the restart is no longer needed.
 * 2. From there (checked: every route back, no restart needed; a route controller pass that
 *    succeeded since is awaited before the route controller's errors are counted), the
 *    control-plane VIP removed at a reload (it leaves the ToR, nothing else does; the machine
 *    retired below is the only control-plane one, which the inventory check refuses while a
 *    control-plane VIP is announced over BGP), then:
 *    - a peer added ahead of the ToR in `[[bgp.peers]]`, then removed again, and an empty pool added
 *      ahead of the Service's and removed: the ToR's session is the same one throughout and the VIP
 *      never leaves the ToR (sampled every 10 ms while BIRD would have restarted the session and
 *      paused its first UPDATE);
 *    - the machine `retired`: every route leaves the ToR over the same session (an UPDATE, no
 *      Cease); `active` again: they return over it;
 *    - `pod_cidrs` off: the pod CIDR leaves the ToR, the VIP stays, and the route controller leaves
 *      the Node's condition alone.
 *
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
import { statusJson } from "../integration/_harness/status_cli.ts";
import { type ControlPlane, startControlPlane } from "../integration/_harness/control_plane.ts";
import type { KeelsonProcess } from "../integration/_harness/keelson_process.ts";
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
import { holdsFor } from "../_support/poll.ts";

const reason = skipLoudly("BGP reload e2e test", await bgpClusterUnavailable());

const POOL = "198.51.100.0/28";
const CP_VIP = `${NET}.100`;
/** Generous: a withdrawal takes milliseconds on an idle machine. */
const BOUND_MS = 30_000;
/** For what waits on a heartbeat (renewed every 5 s), a route controller pass (10 s) or a CLI. */
const SLOW_BOUND_MS = 60_000;
/**
 * How long the VIP is watched after a peer change: past BIRD's 1 s connect delay and its up to
 * 3 s pause before a fresh session's first UPDATE, which a reset session would have shown.
 */
const WATCH_MS = 6_000;
const ROUTE_ERRORS = 'route_controller_route_sync_total{result="error"}';
const ROUTE_SUCCESSES = 'route_controller_route_sync_total{result="success"}';

interface Variant {
  /** `[bgp]` in the inventory; without it, its pool and the control-plane VIP on VRRP. */
  bgp?: boolean;
  /** The control-plane VIP in `[control_plane] vip`. */
  cpVip?: boolean;
  /** A peer that never answers, listed ahead of the ToR. */
  peerAhead?: boolean;
  /** An empty BGP pool listed ahead of the Service's: its static protocol is renumbered. */
  poolAhead?: boolean;
  state?: "active" | "retired";
  podCidrs?: boolean;
}

function inventory(lab: BgpLab, apiserverPort: string, v: Variant = {}): string {
  const bgp = v.bgp ?? true;
  const announce = bgp ? "bgp" : "vrrp";
  return [
    `[cluster]\nname = "e2e"\ncluster_cidr = ["${CLUSTER_CIDR}"]\n`,
    `[control_plane]\nvip = [${v.cpVip ?? true ? `"${CP_VIP}"` : ""}]\nannounce = "${announce}"\n` +
    `port = ${apiserverPort}\n`,
    ...lab.hostSettings(1),
    ...(bgp
      ? [
        ...lab.bgpSettings(1),
        ...(v.peerAhead ? peerSettings("tor-z", `${NET}.250`) : []),
        ...peerSettings("tor", TOR_IP, { podCidrs: v.podCidrs ?? true }),
      ]
      : []),
    ...(v.poolAhead
      ? [
        '[[pools]]\nname = "spare"\naddresses = ["198.51.100.64/28"]\nannounce = "bgp"\n' +
        "auto_assign = false\n",
      ]
      : []),
    `[[pools]]\nname = "lb"\naddresses = ["${POOL}"]\nannounce = "${announce}"\n`,
    `[[machines]]\nname = "cp-1"\nrole = "control-plane"\nstate = "${v.state ?? "active"}"\n` +
    `internal_ips = ["${lab.cpIp(1)}"]\n`,
    `[[machines]]\nname = "w-1"\ninternal_ips = ["${WORKER_IP}"]\n`,
  ].join("\n");
}

const seconds = (ms: number) => (ms / 1000).toFixed(3);

/** What both steps work on: one lab host announcing to the ToR, one control plane. */
interface Cluster {
  lab: BgpLab;
  cp: ControlPlane;
  keelson: KeelsonProcess;
  /** The apiserver's port, for the inventory. */
  port: string;
  /** The inventory file Keelson reloads. */
  path: string;
  /** The Service's VIP. */
  vip: string;
  /** The ToR's session to cp1 when everything was first announced ("Since"). */
  since: number;
}

const atTor = async (lab: BgpLab, prefix: string) => (await lab.torNextHops(prefix)).length > 0;
/** Which of `prefixes` the ToR has a route for. */
const torRoutesOf = async (lab: BgpLab, prefixes: readonly string[]) => {
  const found: string[] = [];
  for (const p of prefixes) if (await atTor(lab, p)) found.push(p);
  return found;
};
const at = (c: Cluster, prefix: string) => atTor(c.lab, prefix);
/** Every prefix the host announces while `[bgp]` is in, the machine active and the VIP set. */
const everyPrefix = (c: Cluster) => [c.vip, CP_VIP, POD_CIDR];
const torRoutes = (c: Cluster, prefixes = everyPrefix(c)) => torRoutesOf(c.lab, prefixes);
const sameAsBefore = async (c: Cluster) =>
  sameSession((await c.lab.torSessionsSince()).get("cp1"), c.since);
/** The log written since `offset` (its length before). */
const logSince = async (c: Cluster, offset: number) => (await c.keelson.log()).slice(offset);

/**
 * Waits until the ToR has no route of cp1's, in its kernel or its BIRD table.
 * @returns how long it took
 */
const everyRouteGone = (c: Cluster) =>
  timedWait(
    "every route of cp1 to leave the ToR",
    async () => {
      if ((await torRoutes(c)).length > 0) return undefined;
      const table = await c.lab.tor("show", "route", "protocol", "cp1");
      return /\d+\.\d+\.\d+\.\d+\/\d+/.test(table) ? undefined : table;
    },
    BOUND_MS,
  );

/** Step 1: a reload removing `[bgp]` withdraws every route; `[bgp]` back announces them again. */
async function bgpRemovedAndBack(c: Cluster): Promise<void> {
  const logBefore = (await c.keelson.log()).length;
  const removedAt = performance.now();
  await c.keelson.reload(c.path, inventory(c.lab, c.port, { bgp: false }));
  const gone = await everyRouteGone(c);
  report(
    `FIGURE bgp reload removing [bgp]: the VIP, the control-plane VIP and the pod CIDR gone ` +
      `from the ToR (kernel and BIRD) ${seconds(gone.ms)} s after the reload`,
  );
  assert.ok(await sameAsBefore(c), "the session stays up (routes withdrawn by UPDATE, no Cease)");
  // the log: what happened, and that a restart is still needed
  const log = await timedWait(
    "the withdrawal in the log",
    async () => {
      const text = await logSince(c, logBefore);
      return text.includes("[bgp] is no longer in the configuration") ? text : undefined;
    },
    BOUND_MS,
    100,
  );
  assert.match(log.value, /withdrew every route BIRD announced from here/);
  assert.match(log.value, /Restart keelson to apply the new setting/);
  assert.match(log.value, /BIRD on this host \(\[bgp\], machine role\) true -> false/);
  // the metrics claim no route; the session is really up and exports nothing
  await timedWait(
    "keelson_bgp_* to show no route",
    async () =>
      await c.keelson.metric(`keelson_bgp_vip_announced{vip="${c.vip}"}`) === undefined &&
        await c.keelson.metric('keelson_bgp_routes_exported{peer="tor"}') === 0
        ? true
        : undefined,
    BOUND_MS,
    100,
  );
  assert.equal(await c.keelson.metric('keelson_bgp_session_up{peer="tor"}'), 1);
  assert.equal(await c.keelson.metric("keelson_config_restart_required"), 1);
  assert.equal(await c.keelson.metric("keelson_bgp_last_configure_success"), 1);
  // keelson status: no host announces the VIPs, the host's session carries no route
  const status = await timedWait(
    "keelson status to show no BGP route",
    async () => {
      const s = (await statusJson(c.cp.tokenKubeconfigPath)).status;
      const host = s.hosts.find((h) => h.host === "cp-1");
      const rows = s.vips.filter((v) => v.vip === c.vip || v.vip === CP_VIP);
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
  for (const r of status.value.vips.filter((v) => v.vip === c.vip || v.vip === CP_VIP)) {
    assert.deepEqual(r.states, [], r.vip);
  }
  assert.ok(host.reload?.restart?.includes("BIRD on this host ([bgp], machine role)"));
  // the route controller (read only at start) ran a pass, failed it, and judged no Node
  await timedWait(
    "a route controller pass after the removal",
    async () => (await c.keelson.metric(ROUTE_ERRORS) ?? 0) > 0 ? true : undefined,
    SLOW_BOUND_MS,
    200,
  );
  assert.equal((await workerNetworkCondition(c.cp))?.reason, "RouteCreated", "no Node tainted");
  report(
    `FIGURE bgp after the removal: withdrawal logged, restart required 1, ` +
      `routes_exported 0, no keelson_bgp_vip_announced series, status tor=up(0) ` +
      `(${seconds(performance.now() - removedAt)} s after the reload)`,
  );

  // --- [bgp] back with the same values: every route returns over the same session
  await c.keelson.reload(c.path, inventory(c.lab, c.port));
  const back = await timedWait(
    "every route back at the ToR",
    async () => (await torRoutes(c)).length === everyPrefix(c).length ? true : undefined,
    BOUND_MS,
    10,
  );
  report(
    `FIGURE bgp reload with [bgp] back: the three routes at the ToR again ${
      seconds(back.ms)
    } s after the reload`,
  );
  assert.ok(await sameAsBefore(c), "the same session carries them");
  await timedWait(
    "the restart-required gauge back to 0",
    async () => await c.keelson.metric("keelson_config_restart_required") === 0 ? true : undefined,
    BOUND_MS,
    100,
  );
  // the line follows BIRD's answer, which the ToR's routes may beat: wait for it
  await timedWait(
    "the log to say [bgp] is back",
    async () =>
      /\[bgp\] is back in the configuration: announcing again/.test(await logSince(c, logBefore))
        ? true
        : undefined,
    BOUND_MS,
    100,
  );
}

/** Step 2: reloads changing the peers, the pools, the machine's state and `pod_cidrs`. */
async function peersPoolsStateAndPodCidrs(c: Cluster): Promise<void> {
  // what step 1 leaves behind is what a fresh start gives: checked, not assumed
  assert.deepEqual(await torRoutes(c), everyPrefix(c), "every route at the ToR");
  assert.equal(await c.keelson.metric("keelson_config_restart_required"), 0);
  const successesBefore = await c.keelson.metric(ROUTE_SUCCESSES) ?? 0;
  // the only control-plane machine is retired below, which the inventory check refuses while a
  // control-plane VIP is announced over BGP (no host left to announce it): a reload removes the
  // VIP first (applied at once, no restart); it leaves the ToR, the other routes stay
  const withoutVip = (v: Variant = {}) => inventory(c.lab, c.port, { ...v, cpVip: false });
  const wanted = [c.vip, POD_CIDR];
  await c.keelson.reload(c.path, withoutVip());
  await timedWait(
    "the control-plane VIP to leave the ToR",
    async () => (await at(c, CP_VIP)) ? undefined : true,
    BOUND_MS,
  );
  assert.deepEqual(await torRoutes(c, wanted), wanted, "the VIP and the pod CIDR stay");
  assert.ok(await sameAsBefore(c), "the same session");
  assert.equal(await c.keelson.metric("keelson_config_restart_required"), 0);

  // --- a peer added ahead of the ToR, then removed, and an empty pool added ahead of the
  // Service's (its static protocol renumbered, keelson_vips4_p0 -> _p1): the VIP never
  // leaves, the session stays
  const steps: { what: string; variant: Variant; marker: string; present: boolean }[] = [
    {
      what: "adding a peer ahead of the ToR",
      variant: { peerAhead: true },
      marker: "tor-z",
      present: true,
    },
    { what: "removing a peer ahead of the ToR", variant: {}, marker: "tor-z", present: false },
    {
      what: "adding an empty pool ahead of the VIP's",
      variant: { poolAhead: true },
      marker: "keelson_vips4_p1",
      present: true,
    },
    { what: "removing that pool", variant: {}, marker: "keelson_vips4_p1", present: false },
  ];
  for (const { what, variant, marker, present } of steps) {
    await c.keelson.reload(c.path, withoutVip(variant));
    await timedWait(
      `BIRD's file after ${what}`,
      async () =>
        (await Deno.readTextFile(c.lab.birdConf(1))).includes(marker) === present
          ? true
          : undefined,
      BOUND_MS,
      20,
    );
    await holdsFor(`the VIP at the ToR after ${what}`, () => at(c, c.vip), {
      forMs: WATCH_MS,
      intervalMs: 10,
    });
    assert.ok(await sameAsBefore(c), `the ToR's session was not reset by ${what}`);
    report(
      `FIGURE bgp reload ${what}: the VIP stayed at the ToR ` +
        `(${seconds(WATCH_MS)} s sampled every 10 ms), same session`,
    );
  }

  // --- retired: every route leaves over the same session; active again: back over it
  await c.keelson.reload(c.path, withoutVip({ state: "retired" }));
  const gone = await everyRouteGone(c);
  assert.ok(await sameAsBefore(c), "retired: routes withdrawn by UPDATE, the session stays");
  report(
    `FIGURE bgp reload retiring the host: its routes gone from the ToR ${
      seconds(gone.ms)
    } s after the reload, same session`,
  );
  await c.keelson.reload(c.path, withoutVip());
  const back = await timedWait(
    "the routes back at the ToR",
    async () => (await torRoutes(c, wanted)).length === wanted.length ? true : undefined,
    BOUND_MS,
  );
  assert.ok(await sameAsBefore(c), "active again over the same session");
  report(`FIGURE bgp reload back to active: routes at the ToR ${seconds(back.ms)} s after`);

  // --- pod_cidrs off: the pod CIDR leaves, the VIP stays, no Node is judged. A pass that
  // succeeded since [bgp] came back first: an error counted below is this step's, not step 1's
  await timedWait(
    "a route controller pass that succeeded since [bgp] came back",
    async () => (await c.keelson.metric(ROUTE_SUCCESSES) ?? 0) > successesBefore ? true : undefined,
    SLOW_BOUND_MS,
    200,
  );
  const errorsBefore = await c.keelson.metric(ROUTE_ERRORS) ?? 0;
  const logBefore = (await c.keelson.log()).length;
  await c.keelson.reload(c.path, withoutVip({ podCidrs: false }));
  const podGone = await timedWait(
    "the pod CIDR to leave the ToR",
    async () => (await at(c, POD_CIDR)) ? undefined : true,
    BOUND_MS,
  );
  assert.ok(await at(c, c.vip), "the VIP stays");
  await timedWait(
    "a route controller pass after pod_cidrs went off",
    async () => (await c.keelson.metric(ROUTE_ERRORS) ?? 0) > errorsBefore ? true : undefined,
    SLOW_BOUND_MS,
    200,
  );
  assert.equal((await workerNetworkCondition(c.cp))?.reason, "RouteCreated", "no Node tainted");
  assert.match(
    await logSince(c, logBefore),
    /no \[\[bgp\.peers\]\] entry has pod_cidrs = true/,
  );
  report(
    `FIGURE bgp reload turning pod_cidrs off: the pod CIDR gone from the ToR ${
      seconds(podGone.ms)
    } s after the reload; the VIP stays; the Node's condition untouched`,
  );
}

Deno.test({
  name: "BGP e2e: reloads at the ToR: [bgp] removed and back; peers, pools, state, pod_cidrs",
  ignore: reason !== undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const lab = await BgpLab.create(1, Deno.env.get("KEELSON_BGP_LAB_PREFIX") ?? "kr");
    let cp: ControlPlane | undefined;
    let agent: KeelsonProcess | undefined;
    const diagnose = async () => {
      if (agent) report(`--- ${agent.process.logPath}\n${(await agent.log()).slice(-4000)}`);
      report(`--- ToR\n${await lab.tor("show", "protocols", "all").catch(() => "")}`);
    };
    try {
      cp = await startControlPlane();
      const port = new URL(cp.server).port;
      agent = await lab.startKeelson(1, cp, inventory(lab, port), "cp-1", ["--controllers", "*"]);

      // --- announcing: the Service VIP, the control-plane VIP and the pod CIDR at the ToR
      const vip = await createWebService(cp);
      await registerPodWorker(cp);
      await timedWait(
        "the VIP, the control-plane VIP and the pod CIDR at the ToR",
        async () =>
          (await torRoutesOf(lab, [vip, CP_VIP, POD_CIDR])).length === 3 ? true : undefined,
        60_000,
        50,
      );
      assert.deepEqual(await lab.torNextHops(POD_CIDR), [WORKER_IP]);
      const cpRef = cp;
      await timedWait(
        "NetworkUnavailable=False/RouteCreated",
        async () =>
          (await workerNetworkCondition(cpRef))?.reason === "RouteCreated" ? true : undefined,
        30_000,
        100,
      );
      const since = (await lab.torSessionsSince()).get("cp1");
      assert.ok(since !== undefined, "cp1's session is up");
      // keelson status: cp-1 holds both VIPs over BGP, as its heartbeat's announcements say
      const holdingBoth = await timedWait(
        "keelson status to show cp-1 holding both VIPs",
        async () => {
          const s = (await statusJson(cpRef.tokenKubeconfigPath)).status;
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
      const cluster: Cluster = {
        lab,
        cp,
        keelson: agent,
        port,
        path: lab.inventoryPath(1),
        vip,
        since,
      };

      const step = (name: string, fn: () => Promise<void>, ignore = false) =>
        t.step({ name, fn, ignore, sanitizeOps: false, sanitizeResources: false });
      const removed = await step(
        "a reload removing [bgp] withdraws the VIPs and pod routes at the ToR; [bgp] back",
        () => bgpRemovedAndBack(cluster),
      );
      // the second step starts where the first ends: after a failure there is nothing to build on
      const reloaded = await step(
        "reloads changing the peers, the pools, the machine's state and pod_cidrs",
        () => peersPoolsStateAndPodCidrs(cluster),
        !removed,
      );
      if (!removed || !reloaded) await diagnose();
    } catch (error) {
      await diagnose();
      throw error;
    } finally {
      await agent?.stop(10_000).catch(() => {});
      await cp?.[Symbol.asyncDispose]().catch(() => {});
      await lab.destroy();
    }
  },
});
