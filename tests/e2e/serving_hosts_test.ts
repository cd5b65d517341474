/**
 * Pools served by worker hosts (`[pools.served_by]`), end to end: one control-plane host and two
 * workers, each running `keelson run` as it ships (the bundle with the baked permission and V8
 * flags, as the unprivileged user beside the root step), against a real kube-apiserver. The
 * workers run in host-side mode: they render and apply their own keepalived or BIRD file and
 * report their heartbeat, while the control-plane host holds the leader Lease and allocates.
 *
 * - VRRP (real keepalived in network namespaces): a pool served only by the workers is on exactly
 *   one worker and never on the control-plane host, whose own pool stays with it; keepalived
 *   stopped (SIGTERM), then crashed (SIGKILL and its port cut) on the serving worker: the other
 *   worker takes the VIP within the bounds of `keepalived_test.ts`; the serving worker's Node
 *   NotReady: it holds the VIP back and the other worker takes it.
 * - BGP (a ToR BIRD with ECMP and BFD): the workers' pool reaches the ToR from both workers and
 *   never from the control-plane host; a worker's link cut: BFD removes its path within the bound
 *   of `bgp_test.ts`; back up: both paths again. An `externalTrafficPolicy: Local` Service of that
 *   pool is announced only by the worker with its ready endpoint (the EndpointSlice from
 *   kube-controller-manager's controller, for a Ready Pod), follows the Pod to the other worker, and a
 *   backend on that worker (the VIP on its loopback, as kube-proxy delivers Local traffic without
 *   SNAT) sees the client's own address. A worker's Node NotReady: its path leaves, its session
 *   stays.
 *
 * Prints the figures (RESULT lines). Needs root, keepalived, bird2, iproute2, curl and the
 * kube-apiserver test binaries; skipped loudly otherwise (failed with KEELSON_REQUIRE_E2E=1).
 *
 * @module
 */
import assert from "node:assert/strict";
import type { V1Lease, V1Service } from "@kubernetes/client-node";
import { findAssets } from "../integration/_harness/assets.ts";
import { hostReports } from "../integration/_harness/heartbeats.ts";
import { type ControlPlane, startControlPlane } from "../integration/_harness/control_plane.ts";
import { registerNode, setNodeReady } from "../integration/_harness/kubelet.ts";
import {
  type ControllerManager,
  findControllerManager,
  startControllerManager,
} from "../integration/_harness/controller_manager.ts";
import type { KeelsonProcess } from "../integration/_harness/keelson_process.ts";
import {
  createLbService,
  createNamespace,
  ingressIps,
} from "../integration/_harness/lb_services.ts";
import { holdsFor, pollUntil } from "../_support/poll.ts";
import { ManagedProcess } from "../integration/_harness/process.ts";
import { BgpLab, bgpLabUnavailable, peerSettings, TOR_IP } from "./_bgp_lab.ts";
import { e2eUnavailable, KeepalivedLab, report, run, skipLoudly } from "./_keepalived_lab.ts";

async function unavailable(): Promise<string | undefined> {
  const base = e2eUnavailable(["keepalived", "ip", "curl"]) ?? bgpLabUnavailable();
  if (base) return base;
  const assets = await findAssets();
  if (!assets.ok) return assets.reason;
  // the Local Service's endpoints come from its EndpointSlice controller
  const kcm = await findControllerManager();
  return kcm.ok ? undefined : kcm.reason;
}

const reason = skipLoudly("serving-hosts e2e test", await unavailable());

/** The lab's nodes: one control-plane host and two workers. */
const HOSTS: Record<string, string> = { n1: "cp-1", n2: "w-1", n3: "w-2" };
const WORKERS = ["n2", "n3"];
/** keepalived_test.ts: a graceful (SIGTERM) failover within 5 s, a crash within 3.5 s. */
const SIGTERM_FAILOVER_BOUND_MS = 5_000;
const CRASH_FAILOVER_BOUND_MS = 3_500;
/** bgp_test.ts: BFD (100 ms x 3) removes a dead link's path within 3 s. */
const BFD_FAILOVER_BOUND_MS = 3_000;

/** The leader Lease's holder, as the host it names. */
async function leaderHost(cp: ControlPlane): Promise<string | undefined> {
  const lease = await cp.request<V1Lease>(
    "GET",
    "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/keelson",
  );
  const holder = (lease.body as V1Lease | undefined)?.spec?.holderIdentity;
  return holder?.slice(0, holder.lastIndexOf("_"));
}

/** Creates Services `lan` and `edge` in namespace `web`, each asking for its pool. */
async function createServices(cp: ControlPlane): Promise<{ lan: string; edge: string }> {
  await createNamespace(cp, "web");
  for (const pool of ["lan", "edge"]) {
    await createLbService(cp, "web", pool, { annotations: { "keelson.io/address-pool": pool } });
  }
  const vip = async (name: string) =>
    (await pollUntil(`a VIP for web/${name}`, async () =>
      ingressIps(
        (await cp.request<V1Service>("GET", `/api/v1/namespaces/web/services/${name}`))
          .body as V1Service,
      )[0], { timeoutMs: 60_000, intervalMs: 50, retryErrors: true })).value;
  return { lan: await vip("lan"), edge: await vip("edge") };
}

/** Service web/local, externalTrafficPolicy Local, in pool edge: its VIP. */
async function createLocalService(cp: ControlPlane, logs: () => Promise<string>): Promise<string> {
  await createLbService(cp, "web", "local", {
    annotations: { "keelson.io/address-pool": "edge" },
    spec: { externalTrafficPolicy: "Local" },
  });
  const read = async () =>
    ingressIps(
      (await cp.request<V1Service>("GET", "/api/v1/namespaces/web/services/local"))
        .body as V1Service,
    )[0];
  return (await pollUntil("a VIP for web/local", read, {
    timeoutMs: 60_000,
    intervalMs: 50,
    retryErrors: true,
    context: logs,
  })).value;
}

const LOCAL_PODS = "/api/v1/namespaces/web/pods";

/**
 * Runs web/local's one Pod on Node `node`, Ready with an address, as the scheduler and the
 * kubelet would leave it (no kubelet runs here): kube-controller-manager's EndpointSlice
 * controller derives the Service's slice from it. The Pod on another Node is deleted first.
 */
async function runLocalPodOn(cp: ControlPlane, node: string): Promise<void> {
  const list = await cp.requestOk<{ items: { metadata: { name: string } }[] }>(
    "GET",
    `${LOCAL_PODS}?labelSelector=app%3Dlocal`,
  );
  for (const pod of list.items) {
    // no kubelet confirms a graceful deletion: grace 0 removes it at once, as after a kubelet's
    await cp.requestOk("DELETE", `${LOCAL_PODS}/${pod.metadata.name}?gracePeriodSeconds=0`);
  }
  const name = `local-${node}`;
  await cp.requestOk("POST", LOCAL_PODS, {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, labels: { app: "local" } },
    spec: { nodeName: node, containers: [{ name: "web", image: "registry.invalid/web:1" }] },
  });
  await cp.requestOk(
    "PATCH",
    `${LOCAL_PODS}/${name}/status`,
    {
      status: {
        phase: "Running",
        podIP: "10.244.9.9",
        podIPs: [{ ip: "10.244.9.9" }],
        conditions: [{ type: "Ready", status: "True" }, {
          type: "ContainersReady",
          status: "True",
        }],
      },
    },
    "application/strategic-merge-patch+json",
  );
}

async function tail(path: string, lines = 30): Promise<string> {
  const text = await Deno.readTextFile(path).catch(() => "");
  return `--- ${path}\n${text.split("\n").slice(-lines).join("\n")}`;
}

const VRRP_SUBNET = "10.254.16";
const VRRP_MGMT = "10.254.17";

function vrrpInventory(lab: KeepalivedLab, node: string, kubeconfig: string): string {
  const machines = Object.entries(HOSTS).map(([n, name], i) =>
    `[[machines]]\nname = "${name}"\nrole = "${n === "n1" ? "control-plane" : "worker"}"\n` +
    `internal_ips = ["${VRRP_SUBNET}.${11 + i}"]\n`
  );
  return [
    '[cluster]\nname = "e2e"\n',
    `[kubernetes]\nkubeconfig = "${kubeconfig}"\n`,
    '[leader_election]\nlease_duration = "6s"\nrenew_deadline = "4s"\nretry_period = "1s"\n',
    '[server]\nlisten = "127.0.0.1:10258"\n',
    ...lab.keepalivedSettings(node),
    `[[pools]]\nname = "lan"\naddresses = ["${VRRP_SUBNET}.100-${VRRP_SUBNET}.109"]\n`,
    `[[pools]]\nname = "edge"\naddresses = ["${VRRP_SUBNET}.120-${VRRP_SUBNET}.129"]\n` +
    'served_by = { roles = ["worker"] }\n',
    ...machines,
  ].join("\n");
}

Deno.test({
  name:
    "VRRP: a pool served by two workers in host-side mode is on one worker, fails over between them",
  ignore: reason !== undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const lab = await KeepalivedLab.create("sh", 3, {
      prefix: `kd${Deno.pid % 100000}sh`,
      subnet: VRRP_SUBNET,
      shipped: true,
    });
    const logs = async () =>
      (await Promise.all(
        lab.nodes.flatMap((n) => [
          tail(`${lab.nodeDir(n)}/keelson.log`),
          tail(`${lab.nodeDir(n)}/keepalived.log`, 8),
          Deno.readTextFile(lab.confFile(n)).then((t) => `--- ${n} file\n${t}`, () => ""),
        ]),
      )).join("\n");
    let kcm: ControllerManager | undefined;
    try {
      const { cp, kubeconfig } = await lab.startControlPlane(VRRP_MGMT);
      for (const node of lab.nodes) {
        await lab.writeInventory(node, vrrpInventory(lab, node, kubeconfig));
        await lab.startKeelson(node, HOSTS[node]!);
      }
      const vips = await createServices(cp);
      // each host's file: the control-plane host the lan VIP only, each worker the edge VIP only
      await pollUntil("each host's file to hold the VIPs of its pools only", async () => {
        for (const node of lab.nodes) {
          const text = await Deno.readTextFile(lab.confFile(node)).catch(() => "");
          const [mine, other] = node === "n1" ? [vips.lan, vips.edge] : [vips.edge, vips.lan];
          if (!text.includes(`${mine}/32`) || text.includes(`${other}/32`)) return undefined;
          if (!text.includes("vrrp_notify_fifo")) return undefined;
        }
        return true;
      }, { timeoutMs: 90_000, intervalMs: 20, retryErrors: true, context: logs });
      for (const node of lab.nodes) lab.startKeepalived(node);
      const all = [vips.lan, vips.edge];
      const placedMs = await lab.waitFor(
        "lan on cp-1 only, edge on exactly one worker",
        (h) =>
          h.get(vips.lan)!.join() === "n1" && h.get(vips.edge)!.length === 1 &&
          WORKERS.includes(h.get(vips.edge)![0]!),
        all,
        30_000,
      ).catch(async (error) => {
        throw new Error(`${error}\n${await logs()}`);
      });
      // and it stays so (sampled for 3 s: never on the control-plane host, never on two)
      await holdsFor("the edge VIP on exactly one worker", async () => {
        const edge = (await lab.holders(all)).get(vips.edge)!;
        return edge.length === 1 && !edge.includes("n1");
      }, {
        forMs: 3_000,
        intervalMs: 100,
        context: async () => JSON.stringify([...await lab.holders(all)]),
      });
      // the control-plane host leads; the workers report heartbeats with their own instances
      const leader = await pollUntil("a leader", () => leaderHost(cp), {
        timeoutMs: 30_000,
        retryErrors: true,
      });
      assert.equal(leader.value, "cp-1");
      const beats = await pollUntil(
        "the workers' heartbeats with their VRRP instances",
        async () => {
          const reports = await hostReports(cp);
          const ok = ["w-1", "w-2"].every((w) =>
            reports.get(w)?.announcements.some((i) => i.vips.includes(vips.edge))
          );
          return ok ? reports : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 20, retryErrors: true, context: logs },
      );
      assert.ok(
        ["w-1", "w-2"].every((w) =>
          beats.value.get(w)!.announcements.every((i) => !i.vips.includes(vips.lan))
        ),
      );
      for (const node of WORKERS) {
        const log = await Deno.readTextFile(`${lab.nodeDir(node)}/keelson.log`);
        assert.match(log, /host-side mode/, `${node} runs in host-side mode`);
        assert.doesNotMatch(log, /Lease acquired|became leader/i);
      }

      // externalTrafficPolicy Local: held by the serving worker with a ready endpoint, and moved
      // with the endpoint (w-1 first: with no endpoint anywhere, the tie goes to w-2's address);
      // the endpoints come from kube-controller-manager's EndpointSlice controller, from a Pod
      // on a registered Node, as in a cluster
      for (const node of WORKERS) await registerNode(cp, HOSTS[node]!, { initialized: true });
      kcm = await startControllerManager(cp, { controllers: ["endpointslice"] });
      const localVip = await createLocalService(cp, logs);
      const both = [...all, localVip];
      await runLocalPodOn(cp, "w-1");
      const onW1 = await lab.waitFor(
        "the Local VIP on w-1 only",
        (h) => h.get(localVip)!.join() === "n2",
        both,
        60_000,
      ).catch(async (error) => {
        throw new Error(`${error}\n${await logs()}`);
      });
      await runLocalPodOn(cp, "w-2");
      const toW2 = await lab.waitFor(
        "the Local VIP on w-2 only, after its endpoint moved",
        (h) => h.get(localVip)!.join() === "n3",
        both,
        60_000,
      ).catch(async (error) => {
        throw new Error(`${error}\n${await logs()}`);
      });
      report(
        `RESULT vrrp_workers_local vip=${localVip} on_w1_ms=${onW1.toFixed(0)} (after the ` +
          `Pod was Ready) moved_to_w2_ms=${toW2.toFixed(0)}`,
      );
      assert.equal((await lab.holders([vips.lan])).get(vips.lan)!.join(), "n1");

      const first = (await lab.holders([vips.edge])).get(vips.edge)![0]!;
      report(
        `RESULT vrrp_workers_placed_ms=${placedMs.toFixed(0)} edge=${vips.edge} on=${
          HOSTS[first]
        } lan=${vips.lan} on=cp-1 leader=${leader.value}`,
      );

      // keepalived stopped on the serving worker: the other worker within the SIGTERM bound
      const second = WORKERS.find((n) => n !== first)!;
      lab.keepalived.get(first)!.kill("SIGTERM");
      const termMs = await lab.waitFor(
        `the edge VIP to move from ${HOSTS[first]} to ${HOSTS[second]}`,
        (h) => h.get(vips.edge)!.join() === second,
        all,
        30_000,
      );
      report(`RESULT vrrp_workers_sigterm_failover_ms=${termMs.toFixed(0)}`);
      assert.ok(termMs < SIGTERM_FAILOVER_BOUND_MS, `SIGTERM failover took ${termMs} ms`);
      assert.equal((await lab.holders([vips.lan])).get(vips.lan)!.join(), "n1");
      // keepalived back on the first worker (once the old one is gone)
      await lab.keepalived.get(first)!.status;
      const restartLog = `${lab.nodeDir(first)}/keepalived.log`;
      const logBefore = (await Deno.readTextFile(restartLog)).length;
      lab.startKeepalived(first);
      // the restarted instance has taken a state (a backup the crash below can fail over to, or
      // the holder again after a preemption) and the VIP is on one worker
      await pollUntil(`keepalived on ${HOSTS[first]} back in a VRRP state`, async () => {
        const since = (await Deno.readTextFile(restartLog)).slice(logBefore);
        if (!/Entering (?:BACKUP|MASTER) STATE/.test(since)) return false;
        return (await lab.holders([vips.edge])).get(vips.edge)!.length === 1;
      }, { timeoutMs: 30_000, intervalMs: 50, retryErrors: true, context: logs });

      // a serving worker whose Node goes NotReady holds its Service VIPs back: the other worker
      // takes them; Ready again, it serves again (serving_hold.ts). After the SIGTERM figure, which
      // stays the steady state's: a worker just back from a hold may be waiting out
      // preempt_delay, and keepalived then takes over on its master-down timer
      const heldBy = (await lab.holders([vips.edge])).get(vips.edge)![0]!;
      const takesOver = WORKERS.find((n) => n !== heldBy)!;
      await setNodeReady(cp, HOSTS[heldBy]!, "False");
      const notReadyMs = await lab.waitFor(
        `the edge VIP to leave ${HOSTS[heldBy]} (Node NotReady) for ${HOSTS[takesOver]}`,
        (h) => h.get(vips.edge)!.join() === takesOver,
        both,
        60_000,
      ).catch(async (error) => {
        throw new Error(`${error}\n${await logs()}`);
      });
      report(
        `RESULT vrrp_workers_node_not_ready_ms=${notReadyMs.toFixed(0)} from=${HOSTS[heldBy]} to=${
          HOSTS[takesOver]
        }`,
      );
      assert.match(
        await Deno.readTextFile(`${lab.nodeDir(heldBy)}/keelson.log`),
        new RegExp(
          `holds back its Service VIPs through keepalived: \\W*Node \\W*${
            HOSTS[heldBy]
          }\\W* is not Ready`,
        ),
      );
      assert.equal((await lab.holders([vips.lan])).get(vips.lan)!.join(), "n1");
      await setNodeReady(cp, HOSTS[heldBy]!, "True");
      await pollUntil(`${HOSTS[heldBy]} serving again, the edge VIP on one worker`, async () => {
        const log = await Deno.readTextFile(`${lab.nodeDir(heldBy)}/keelson.log`);
        if (!log.includes("serves its VIPs through keepalived again")) return false;
        const edge = (await lab.holders([vips.edge])).get(vips.edge)!;
        return edge.length === 1 && WORKERS.includes(edge[0]!);
      }, { timeoutMs: 60_000, intervalMs: 50, retryErrors: true, context: logs });

      // a crash of the serving worker's keepalived: parent and VRRP child killed, its port cut
      const holder = (await lab.holders([vips.edge])).get(vips.edge)![0]!;
      const survivor = WORKERS.find((n) => n !== holder)!;
      const parent = lab.keepalived.get(holder)!.pid;
      const child = await lab.vrrpPid(holder);
      const crashAt = performance.now();
      Deno.kill(parent, "SIGSTOP");
      Deno.kill(child, "SIGSTOP");
      Deno.kill(parent, "SIGKILL");
      Deno.kill(child, "SIGKILL");
      await run("ip", ["-n", lab.ns("sw"), "link", "set", `p-${holder}`, "down"]);
      await lab.waitFor(
        `the edge VIP on ${HOSTS[survivor]} after ${HOSTS[holder]} crashed`,
        (h) => h.get(vips.edge)!.includes(survivor),
        all,
        30_000,
      );
      const crashMs = performance.now() - crashAt;
      report(
        `RESULT vrrp_workers_crash_failover_ms=${crashMs.toFixed(0)} from=${HOSTS[holder]} to=${
          HOSTS[survivor]
        }`,
      );
      assert.ok(crashMs < CRASH_FAILOVER_BOUND_MS, `crash failover took ${crashMs} ms`);
      assert.ok(!(await lab.holders([vips.edge])).get(vips.edge)!.includes("n1"));
    } catch (error) {
      if (Deno.env.get("KEELSON_E2E_KEEP_LOGS") === "1") report(await logs());
      throw error;
    } finally {
      await kcm?.stop();
      await lab.close();
    }
  },
});

/**
 * The address a backend on BGP lab host `i` sees for a client at the ToR that connects to `vip`:
 * the VIP on the host's loopback (as kube-proxy would deliver a Local Service's traffic, without
 * SNAT) and a one-shot TCP server that answers with its peer's address.
 */
async function sourceSeenByBackend(lab: BgpLab, i: number, vip: string): Promise<string> {
  const ns = lab.ns(`cp${i}`);
  await run("ip", ["-n", ns, "addr", "add", `${vip}/32`, "dev", "lo"]);
  const server = new ManagedProcess(
    "backend",
    "ip",
    [
      "netns",
      "exec",
      ns,
      "python3",
      "-c",
      "import socket\ns=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n" +
      `s.bind(("${vip}", 80)); s.listen(1); s.settimeout(20)\n` +
      "c,a=s.accept(); c.sendall((a[0]+'\\n').encode()); c.close()",
    ],
    `${lab.dir}/backend.log`,
  );
  server.start();
  try {
    // the server listens a moment after it starts: a refused connection is "not yet"
    const answer = await pollUntil(`an answer from the backend on ${vip}`, async () => {
      const out = await run("ip", [
        "netns",
        "exec",
        lab.ns("tor"),
        "bash",
        "-c",
        `exec 3<>/dev/tcp/${vip}/80 && timeout 2 head -1 <&3`,
      ]).catch(() => "");
      return out.trim() === "" ? undefined : out.trim();
    }, { timeoutMs: 15_000, intervalMs: 100 });
    return answer.value;
  } finally {
    await server.stop(1000);
  }
}

const BGP_LAN = "198.51.100.0/28";
const BGP_EDGE = "203.0.113.0/28";

/** Host `i` of the BGP lab's inventory: lab host 1 is cp-1, 2 and 3 the workers. */
function bgpInventory(lab: BgpLab, i: number): string {
  return [
    '[cluster]\nname = "e2e"\n',
    ...lab.hostSettings(i),
    ...lab.bgpSettings(i, { bfd: true }),
    ...peerSettings("tor", TOR_IP, { bfd: true }),
    `[[pools]]\nname = "lan"\naddresses = ["${BGP_LAN}"]\nannounce = "bgp"\n`,
    `[[pools]]\nname = "edge"\naddresses = ["${BGP_EDGE}"]\nannounce = "bgp"\n` +
    'served_by = { roles = ["worker"] }\n',
    `[[machines]]\nname = "cp-1"\nrole = "control-plane"\ninternal_ips = ["${lab.cpIp(1)}"]\n`,
    `[[machines]]\nname = "w-1"\ninternal_ips = ["${lab.cpIp(2)}"]\n`,
    `[[machines]]\nname = "w-2"\ninternal_ips = ["${lab.cpIp(3)}"]\n`,
  ].join("\n");
}

Deno.test({
  name: "BGP: a pool served by two workers in host-side mode reaches the ToR from both; BFD cut",
  ignore: reason !== undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const lab = await BgpLab.create(3, Deno.env.get("KEELSON_BGP_LAB_PREFIX") ?? "ks");
    let cp: ControlPlane | undefined;
    let kcm: ControllerManager | undefined;
    const agents: KeelsonProcess[] = [];
    const names = ["cp-1", "w-1", "w-2"];
    const logs = async () =>
      (await Promise.all([
        ...agents.map(async (a, i) => `--- ${names[i]}\n${(await a.log()).slice(-4000)}`),
        tail(`${lab.dir}/bird-tor.log`, 20),
      ])).join("\n");
    try {
      cp = await startControlPlane();
      for (let i = 1; i <= 3; i++) {
        agents.push(await lab.startKeelson(i, cp, bgpInventory(lab, i), names[i - 1]!));
      }
      await pollUntil("3 sessions Established at the ToR", async () => {
        const out = await lab.tor("show", "protocols");
        return (out.match(/Established/g) ?? []).length === 3 ? true : undefined;
      }, { timeoutMs: 90_000, intervalMs: 100, retryErrors: true, context: logs });
      const vips = await createServices(cp);
      const workers = [lab.cpIp(2), lab.cpIp(3)].sort();
      const ecmp = await pollUntil(
        "the edge VIP from both workers, the lan VIP from cp-1",
        async () => {
          const edge = await lab.torNextHops(vips.edge);
          const lan = await lab.torNextHops(vips.lan);
          return edge.join() === workers.join() && lan.join() === lab.cpIp(1) ? edge : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 20, retryErrors: true, context: logs },
      );
      report(
        `RESULT bgp_workers_ecmp edge=${vips.edge} via=${ecmp.value.join(",")} lan=${vips.lan} ` +
          `via=${lab.cpIp(1)} (${ecmp.ms.toFixed(0)} ms after both statuses)`,
      );
      // and it stays so, and the control-plane host leads
      await holdsFor(
        "the edge VIP from both workers",
        async () => (await lab.torNextHops(vips.edge)).join() === workers.join(),
        {
          forMs: 2_000,
          intervalMs: 100,
          context: async () => `next hops: ${(await lab.torNextHops(vips.edge)).join()}`,
        },
      );
      assert.equal(
        (await pollUntil("a leader", () => leaderHost(cp!), {
          timeoutMs: 30_000,
          retryErrors: true,
        })).value,
        "cp-1",
      );
      for (const i of [1, 2]) assert.match(await agents[i]!.log(), /host-side mode/);

      // a worker's link cut: BFD takes its path away, the other worker's stays
      const cutAt = performance.now();
      await lab.link("cp2", false);
      await pollUntil("w-1's path to leave the ToR", async () => {
        const hops = await lab.torNextHops(vips.edge);
        return hops.join() === lab.cpIp(3) ? true : undefined;
      }, { timeoutMs: 30_000, intervalMs: 5, retryErrors: true, context: logs });
      const cutMs = performance.now() - cutAt;
      report(`RESULT bgp_workers_bfd_failover_ms=${cutMs.toFixed(0)} (BFD 100 ms x 3)`);
      assert.ok(cutMs < BFD_FAILOVER_BOUND_MS, `w-1's path left after ${cutMs.toFixed(0)} ms`);
      assert.deepEqual(await lab.torNextHops(vips.lan), [lab.cpIp(1)]);
      await lab.link("cp2", true);
      const back = await pollUntil(
        "both workers' paths again",
        async () => (await lab.torNextHops(vips.edge)).join() === workers.join() ? true : undefined,
        { timeoutMs: 60_000, intervalMs: 20, retryErrors: true, context: logs },
      );
      report(`RESULT bgp_workers_path_back_ms=${back.ms.toFixed(0)}`);

      // externalTrafficPolicy Local: announced only by the serving worker with a ready endpoint,
      // following the endpoint; the backend there sees the client's own address
      // the endpoints come from kube-controller-manager's EndpointSlice controller, from a Pod
      // on a registered Node, as in a cluster
      for (const name of ["w-1", "w-2"]) await registerNode(cp, name, { initialized: true });
      kcm = await startControllerManager(cp, { controllers: ["endpointslice"] });
      const localVip = await createLocalService(cp, logs);
      await runLocalPodOn(cp, "w-2");
      const onW2 = await pollUntil(
        "the Local VIP from w-2 only",
        async () => (await lab.torNextHops(localVip)).join() === lab.cpIp(3) ? true : undefined,
        { timeoutMs: 30_000, intervalMs: 20, retryErrors: true, context: logs },
      );
      const client = await sourceSeenByBackend(lab, 3, localVip);
      report(
        `RESULT bgp_workers_local vip=${localVip} via=${lab.cpIp(3)} (${
          onW2.ms.toFixed(0)
        } ms after the Pod was Ready) backend saw client ${client}`,
      );
      assert.equal(client, TOR_IP);
      const movedAt = performance.now();
      await runLocalPodOn(cp, "w-1");
      await pollUntil(
        "the Local VIP from w-1 only, after its endpoint moved",
        async () => (await lab.torNextHops(localVip)).join() === lab.cpIp(2) ? true : undefined,
        { timeoutMs: 30_000, intervalMs: 20, retryErrors: true, context: logs },
      );
      report(
        `RESULT bgp_workers_local_moved_ms=${(performance.now() - movedAt).toFixed(0)} to w-1`,
      );
      assert.ok(!(await lab.torNextHops(localVip)).includes(lab.cpIp(1)));

      // a serving worker's Node NotReady: it withdraws its Service VIPs, its session stays up;
      // Ready again, it announces them again (serving_hold.ts)
      const heldAt = performance.now();
      await setNodeReady(cp, "w-2", "False");
      await pollUntil(
        "the edge VIP from w-1 only while w-2's Node is NotReady",
        async () => (await lab.torNextHops(vips.edge)).join() === lab.cpIp(2) ? true : undefined,
        { timeoutMs: 30_000, intervalMs: 20, retryErrors: true, context: logs },
      );
      report(`RESULT bgp_workers_node_not_ready_ms=${(performance.now() - heldAt).toFixed(0)}`);
      assert.equal((await lab.tor("show", "protocols")).match(/Established/g)?.length, 3);
      await setNodeReady(cp, "w-2", "True");
      await pollUntil(
        "both workers' paths again once w-2's Node is Ready",
        async () => (await lab.torNextHops(vips.edge)).join() === workers.join() ? true : undefined,
        { timeoutMs: 30_000, intervalMs: 20, retryErrors: true, context: logs },
      );
    } finally {
      for (const agent of agents) await agent.stop().catch(() => {});
      await kcm?.stop();
      await cp?.stop();
      await lab.destroy();
    }
  },
});
