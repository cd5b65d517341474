/**
 * BGP end to end: reloads that change the peers, the machine's state and `pod_cidrs` leave nothing
 * stale at the ToR and withdraw nothing still wanted. A ToR BIRD and one control-plane host (its
 * own BIRD and `keelson run`) in network namespaces (`kr-*`, or `KEELSON_BGP_LAB_PREFIX`), against
 * a real kube-apiserver:
 * - a peer added ahead of the ToR in `[[bgp.peers]]`, then removed again, and an empty pool added
 *   ahead of the Service's and removed: the ToR's session is the same one throughout and the VIP
 *   never leaves the ToR (sampled every 10 ms while BIRD would have restarted the session and
 *   paused its first UPDATE);
 * - the machine `retired`: every route leaves the ToR over the same session (an UPDATE, no Cease);
 *   `active` again: they return over it;
 * - `pod_cidrs` off: the pod CIDR leaves the ToR, the VIP stays, and the route controller leaves the
 *   Node's condition alone.
 * Prints the figures.
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
/** Generous: a withdrawal takes milliseconds on an idle machine. */
const BOUND_MS = 30_000;
/** For what waits on a route controller pass (10 s). */
const SLOW_BOUND_MS = 60_000;
/**
 * How long the VIP is watched after a peer change: past BIRD's 1 s connect delay and its up to
 * 3 s pause before a fresh session's first UPDATE, which a reset session would have shown.
 */
const WATCH_MS = 6_000;

interface Variant {
  /** A peer that never answers, listed ahead of the ToR. */
  peerAhead?: boolean;
  /** An empty BGP pool listed ahead of the Service's: its static protocol is renumbered. */
  poolAhead?: boolean;
  state?: "active" | "retired";
  podCidrs?: boolean;
}

function inventory(lab: BgpLab, apiserverPort: string, v: Variant = {}): string {
  return [
    `[cluster]\nname = "e2e"\ncluster_cidr = ["${CLUSTER_CIDR}"]\n`,
    `[control_plane]\nport = ${apiserverPort}\n`,
    ...lab.hostSettings(1),
    ...lab.bgpSettings(1),
    ...(v.peerAhead ? peerSettings("tor-z", `${NET}.250`) : []),
    ...peerSettings("tor", TOR_IP, { podCidrs: v.podCidrs ?? true }),
    ...(v.poolAhead
      ? [
        '[[pools]]\nname = "spare"\naddresses = ["198.51.100.64/28"]\nannounce = "bgp"\n' +
        "auto_assign = false\n",
      ]
      : []),
    `[[pools]]\nname = "lb"\naddresses = ["${POOL}"]\nannounce = "bgp"\n`,
    `[[machines]]\nname = "cp-1"\nrole = "control-plane"\nstate = "${v.state ?? "active"}"\n` +
    `internal_ips = ["${lab.cpIp(1)}"]\n`,
    `[[machines]]\nname = "w-1"\ninternal_ips = ["${WORKER_IP}"]\n`,
  ].join("\n");
}

const seconds = (ms: number) => (ms / 1000).toFixed(3);

Deno.test({
  name: "BGP e2e: reloads changing the peers, the machine's state and pod_cidrs at the ToR",
  ignore: reason !== undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const lab = await BgpLab.create(1, Deno.env.get("KEELSON_BGP_LAB_PREFIX") ?? "kr");
    let cp: ControlPlane | undefined;
    let agent: KeelsonProcess | undefined;
    try {
      cp = await startControlPlane();
      const cpRef = cp;
      const port = new URL(cp.server).port;
      agent = await lab.startKeelson(1, cp, inventory(lab, port), "cp-1", ["--controllers", "*"]);
      const keelson = agent;
      const path = lab.inventoryPath(1);

      const vip = await createWebService(cp);
      await registerPodWorker(cp);
      const at = async (prefix: string) => (await lab.torNextHops(prefix)).length > 0;
      await timedWait(
        "the VIP and the pod CIDR at the ToR",
        async () => (await at(vip)) && (await at(POD_CIDR)) ? true : undefined,
        60_000,
        50,
      );
      const nodeCondition = () => workerNetworkCondition(cpRef);
      await timedWait(
        "NetworkUnavailable=False/RouteCreated",
        async () => (await nodeCondition())?.reason === "RouteCreated" ? true : undefined,
        30_000,
        100,
      );
      const since = (await lab.torSessionsSince()).get("cp1");
      assert.ok(since !== undefined, "cp1's session is up");
      const sameAsBefore = async () =>
        sameSession((await lab.torSessionsSince()).get("cp1"), since);

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
        await keelson.reload(path, inventory(lab, port, variant));
        await timedWait(
          `BIRD's file after ${what}`,
          async () =>
            (await Deno.readTextFile(lab.birdConf(1))).includes(marker) === present
              ? true
              : undefined,
          BOUND_MS,
          20,
        );
        await holdsFor(`the VIP at the ToR after ${what}`, () => at(vip), {
          forMs: WATCH_MS,
          intervalMs: 10,
        });
        assert.ok(await sameAsBefore(), `the ToR's session was not reset by ${what}`);
        report(
          `FIGURE bgp reload ${what}: the VIP stayed at the ToR ` +
            `(${seconds(WATCH_MS)} s sampled every 10 ms), same session`,
        );
      }

      // --- retired: every route leaves over the same session; active again: back over it
      await keelson.reload(path, inventory(lab, port, { state: "retired" }));
      const gone = await timedWait(
        "every route of cp1 to leave the ToR",
        async () => {
          if ((await at(vip)) || (await at(POD_CIDR))) return undefined;
          const table = await lab.tor("show", "route", "protocol", "cp1");
          return /\d+\.\d+\.\d+\.\d+\/\d+/.test(table) ? undefined : table;
        },
        BOUND_MS,
      );
      assert.ok(await sameAsBefore(), "retired: routes withdrawn by UPDATE, the session stays");
      report(
        `FIGURE bgp reload retiring the host: its routes gone from the ToR ${
          seconds(gone.ms)
        } s after the reload, same session`,
      );
      await keelson.reload(path, inventory(lab, port));
      const back = await timedWait(
        "the routes back at the ToR",
        async () => (await at(vip)) && (await at(POD_CIDR)) ? true : undefined,
        BOUND_MS,
      );
      assert.ok(await sameAsBefore(), "active again over the same session");
      report(`FIGURE bgp reload back to active: routes at the ToR ${seconds(back.ms)} s after`);

      // --- pod_cidrs off: the pod CIDR leaves, the VIP stays, no Node is judged
      const errorsBefore =
        await keelson.metric('route_controller_route_sync_total{result="error"}') ?? 0;
      await keelson.reload(path, inventory(lab, port, { podCidrs: false }));
      const podGone = await timedWait(
        "the pod CIDR to leave the ToR",
        async () => (await at(POD_CIDR)) ? undefined : true,
        BOUND_MS,
      );
      assert.ok(await at(vip), "the VIP stays");
      await timedWait(
        "a route controller pass after pod_cidrs went off",
        async () =>
          (await keelson.metric('route_controller_route_sync_total{result="error"}') ?? 0) >
              errorsBefore
            ? true
            : undefined,
        SLOW_BOUND_MS,
        200,
      );
      assert.equal((await nodeCondition())?.reason, "RouteCreated", "no Node tainted");
      assert.match(await keelson.log(), /no \[\[bgp\.peers\]\] entry has pod_cidrs = true/);
      report(
        `FIGURE bgp reload turning pod_cidrs off: the pod CIDR gone from the ToR ${
          seconds(podGone.ms)
        } s after the reload; the VIP stays; the Node's condition untouched`,
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
