/**
 * A BGP lab in network namespaces named `kb-*` (or another prefix, one per test file that may run
 * beside another): a bridge (`kb-sw`), a ToR (`kb-tor`, BIRD as the operator's router, AS 64512,
 * ECMP into its kernel, BFD 100 ms x 3), control-plane hosts (`kb-cpN`, each running its own BIRD
 * from a file Keelson owns) and a worker (`kb-w1`) with a "pod" address on lo. No default route
 * anywhere: traffic cannot leave the namespaces.
 *
 * Keelson runs as it ships (`shipped_keelson.ts`), unprivileged: each host's BIRD file and control
 * socket are in directories under the binary's baked write paths, owned by the test user, and
 * each host's BIRD runs with the test user's group, so its socket (root:group 0660) is one that
 * user may use, as keelson.service's user is in group `bird` on a real host.
 *
 * @module
 */
import type { V1Node, V1NodeCondition } from "@kubernetes/client-node";
import { findAssets } from "../integration/_harness/assets.ts";
import type { ControlPlane } from "../integration/_harness/control_plane.ts";
import { type KeelsonProcess, startKeelson } from "../integration/_harness/keelson_process.ts";
import { registerNode } from "../integration/_harness/kubelet.ts";
import {
  createLbService,
  createNamespace,
  ingressIps,
  waitIngress,
} from "../integration/_harness/lb_services.ts";
import { ManagedProcess } from "../integration/_harness/process.ts";
import {
  readableByTestUser,
  type ShippedDirs,
  shippedDirs,
  TEST_USER,
} from "../integration/_harness/shipped_keelson.ts";
import { e2eUnavailable, run } from "./_keepalived_lab.ts";
import { pollUntil } from "../_support/poll.ts";

/** The lab's addresses. */
export const NET = "10.252.0";
export const TOR_IP = `${NET}.1`;
export const TOR_ASN = 64512;
export const CP_ASN = 64513;
export const WORKER_IP = `${NET}.21`;
export const POD_CIDR = "10.244.1.0/24";
/** The pods' range ([cluster] cluster_cidr) holding POD_CIDR. */
export const CLUSTER_CIDR = "10.244.0.0/16";
export const POD_IP = "10.244.1.5";

/** Why the BGP e2e tests cannot run here, or undefined. */
export function bgpLabUnavailable(): string | undefined {
  return e2eUnavailable(["bird", "birdcl", "ip", "python3"]);
}

/**
 * Why a BGP e2e test against a real kube-apiserver cannot run here (the lab's programs or the
 * apiserver's test binaries missing), or undefined.
 */
export async function bgpClusterUnavailable(): Promise<string | undefined> {
  const assets = await findAssets();
  return bgpLabUnavailable() ?? (assets.ok ? undefined : assets.reason);
}

/**
 * An inventory's `[[bgp.peers]]` entry for a router in the ToR's AS.
 * @param options `bfd`: BFD on the session; `podCidrs`: the Nodes' pod CIDRs announced to it,
 *   with the lab's /24 as the peer's subnet
 * @returns its lines, ending in a blank one
 */
export function peerSettings(
  name: string,
  address: string,
  options: { bfd?: boolean; podCidrs?: boolean } = {},
): string[] {
  return [
    "[[bgp.peers]]",
    `name = "${name}"`,
    `address = "${address}"`,
    `asn = ${TOR_ASN}`,
    ...(options.bfd ? ["bfd = true"] : []),
    ...(options.podCidrs ? ["pod_cidrs = true", `subnet = "${NET}.0/24"`] : []),
    "",
  ];
}

/**
 * Creates Service web/web (type LoadBalancer, in namespace web) and waits up to 60 s for its VIP.
 * @returns the VIP
 */
export async function createWebService(cp: ControlPlane): Promise<string> {
  await createNamespace(cp, "web");
  await createLbService(cp, "web", "web");
  const { service } = await waitIngress(cp, "web", "web", 60_000);
  return ingressIps(service)[0]!;
}

/**
 * Registers the lab's worker as Node w-1 (initialized, InternalIP WORKER_IP) and gives it POD_CIDR,
 * as the node IPAM controller would.
 */
export async function registerPodWorker(cp: ControlPlane): Promise<void> {
  await registerNode(cp, "w-1", {
    addresses: [{ type: "InternalIP", address: WORKER_IP }],
    initialized: true,
  });
  await cp.requestOk("PATCH", "/api/v1/nodes/w-1", {
    spec: { podCIDR: POD_CIDR, podCIDRs: [POD_CIDR] },
  });
}

/** The route controller's NetworkUnavailable condition on Node w-1, or undefined before it set one. */
export async function workerNetworkCondition(
  cp: ControlPlane,
): Promise<V1NodeCondition | undefined> {
  const node = (await cp.request<V1Node>("GET", "/api/v1/nodes/w-1")).body as V1Node;
  return node.status?.conditions?.find((c) => c.type === "NetworkUnavailable");
}

/** Whether two "Since" readings are the same session (within 50 ms; both present). */
export function sameSession(a: number | undefined, b: number | undefined): boolean {
  return a !== undefined && b !== undefined && Number.isFinite(a) && Math.abs(a - b) <= 50;
}

/** One lab. */
export class BgpLab {
  readonly dir: string;
  readonly hosts: number;
  /** Prefix of the namespaces (`kb` -> `kb-tor`) and of the switch ports (`kbp-tor`). */
  readonly prefix: string;
  #namespaces: string[] = [];
  #birds = new Map<string, ManagedProcess>();
  /** Keelson's directories per control-plane host (1-based). */
  #shipped = new Map<number, ShippedDirs>();

  private constructor(dir: string, hosts: number, prefix: string) {
    this.dir = dir;
    this.hosts = hosts;
    this.prefix = prefix;
  }

  /** Namespace of a node (`tor`, `cp1`, `w1`, `sw`). */
  ns(node: string): string {
    return `${this.prefix}-${node}`;
  }

  /** IP of control-plane host `i` (1-based). */
  cpIp(i: number): string {
    return `${NET}.${10 + i}`;
  }

  /** The BIRD file Keelson writes for host `i`. */
  birdConf(i: number): string {
    return `${this.#dirs(i).bird}/bird.conf`;
  }

  /** The control socket of host `i`'s BIRD. */
  birdSocket(i: number): string {
    return `${this.#dirs(i).birdSocket}/bird.ctl`;
  }

  /**
   * `[keepalived] track_file_dir` of host `i`: with keepalived disabled, Keelson still writes the
   * control-plane VIP's apiserver health there (under the baked write paths, owned by the user).
   */
  trackDir(i: number): string {
    return this.#dirs(i).track;
  }

  #dirs(i: number): ShippedDirs {
    const dirs = this.#shipped.get(i);
    if (!dirs) throw new Error(`No control-plane host ${i} in this lab`);
    return dirs;
  }

  /** Host `i`'s inventory, which its Keelson runs with and reloads. */
  inventoryPath(i: number): string {
    return `${this.dir}/cp${i}/keelson.toml`;
  }

  /**
   * The inventory lines of host `i` that every BGP lab test shares: keepalived off (its
   * `track_file_dir` still set, see `trackDir`) and a quick leader election (a 4 s Lease).
   * @returns the lines, ending in a blank one
   */
  hostSettings(i: number): string[] {
    return [
      `[keepalived]\nenabled = false\ntrack_file_dir = "${this.trackDir(i)}"\n`,
      '[leader_election]\nlease_duration = "4s"\nrenew_deadline = "3s"\nretry_period = "1s"\n',
    ];
  }

  /**
   * `[bgp]` of host `i`: its BIRD file and socket, the ToR's timers (hold 9 s, keepalive 3 s,
   * error wait 1-5 s), IPv4 only, BIRD's sessions read every 500 ms.
   * @param options `bfd`: BFD at 100 ms x 3, as the ToR runs it
   * @returns the lines, ending in a blank one
   */
  bgpSettings(i: number, options: { bfd?: boolean } = {}): string[] {
    return [
      "[bgp]",
      `asn = ${CP_ASN}`,
      `config_file = "${this.birdConf(i)}"`,
      `socket = "${this.birdSocket(i)}"`,
      "hold_time = 9",
      "keepalive_time = 3",
      "error_wait_time = [1, 5]",
      'families = ["ipv4"]',
      "status_interval_ms = 500",
      ...(options.bfd ? ["bfd = { interval_ms = 100, multiplier = 3 }"] : []),
      "",
    ];
  }

  /**
   * Writes host `i`'s inventory (readable by the test user, as the control plane's token
   * kubeconfig) and starts Keelson there as it ships, unprivileged.
   * @param host its machine name (`--host`)
   * @param args more flags of `keelson run`
   * @returns the running Keelson
   */
  async startKeelson(
    i: number,
    cp: ControlPlane,
    inventory: string,
    host: string,
    args: string[] = [],
  ): Promise<KeelsonProcess> {
    const path = this.inventoryPath(i);
    await Deno.writeTextFile(path, inventory);
    await readableByTestUser(path, cp.tokenKubeconfigPath);
    return await startKeelson({
      configPath: path,
      kubeconfig: cp.tokenKubeconfigPath,
      host,
      dir: this.dir,
      args,
      unprivileged: true,
    });
  }

  /** The ToR's control socket. */
  get torSocket(): string {
    return `${this.dir}/tor.ctl`;
  }

  /**
   * Builds the namespaces and starts the ToR's BIRD and every host's BIRD (with a minimal file
   * that Keelson replaces).
   * @param hosts number of control-plane hosts
   * @param prefix of the namespaces and ports (two letters keep port names within 15 bytes)
   */
  static async create(hosts: number, prefix = "kb"): Promise<BgpLab> {
    if (!/^[a-z]{2}$/.test(prefix)) throw new Error(`lab prefix ${prefix}: two letters`);
    for (const line of (await run("ip", ["netns", "list"])).split("\n")) {
      if (line.startsWith(`${prefix}-`)) {
        throw new Error(`namespace ${line.split(" ")[0]} exists; clean up earlier runs first`);
      }
    }
    const lab = new BgpLab(await Deno.makeTempDir({ prefix: "keelson-bgp-e2e." }), hosts, prefix);
    await Deno.chmod(lab.dir, 0o755);
    try {
      for (let i = 1; i <= hosts; i++) lab.#shipped.set(i, await shippedDirs());
      await lab.#build();
    } catch (error) {
      await lab.destroy();
      throw error;
    }
    return lab;
  }

  async #addNs(name: string): Promise<void> {
    await run("ip", ["netns", "add", name]);
    this.#namespaces.push(name);
    await run("ip", ["-n", name, "link", "set", "lo", "up"]);
  }

  async #build(): Promise<void> {
    const sw = this.ns("sw");
    await this.#addNs(sw);
    await run("ip", ["-n", sw, "link", "add", "br0", "type", "bridge"]);
    await run("ip", ["-n", sw, "link", "set", "br0", "up"]);
    const nodes: [string, string][] = [["tor", TOR_IP], ["w1", WORKER_IP]];
    for (let i = 1; i <= this.hosts; i++) nodes.push([`cp${i}`, this.cpIp(i)]);
    for (const [node, ip] of nodes) {
      const ns = this.ns(node);
      await this.#addNs(ns);
      await run("ip", [
        "-n",
        sw,
        "link",
        "add",
        `${this.prefix}p-${node}`,
        "type",
        "veth",
        "peer",
        "name",
        "eth0",
        "netns",
        ns,
      ]);
      await run("ip", ["-n", sw, "link", "set", `${this.prefix}p-${node}`, "master", "br0", "up"]);
      await run("ip", ["-n", ns, "addr", "add", `${ip}/24`, "dev", "eth0"]);
      await run("ip", ["-n", ns, "link", "set", "eth0", "up"]);
    }
    await run("ip", ["-n", this.ns("w1"), "addr", "add", `${POD_IP}/32`, "dev", "lo"]);
    await Deno.writeTextFile(`${this.dir}/tor.conf`, this.#torConfig());
    this.#startBird("tor", `${this.dir}/tor.conf`, this.torSocket);
    for (let i = 1; i <= this.hosts; i++) {
      await Deno.mkdir(`${this.dir}/cp${i}`, { recursive: true });
      await Deno.writeTextFile(
        this.birdConf(i),
        `router id ${this.cpIp(i)};\nprotocol device {\n}\n`,
      );
      this.#startBird(`cp${i}`, this.birdConf(i), this.birdSocket(i), TEST_USER);
    }
    for (const node of ["tor", ...Array.from({ length: this.hosts }, (_, i) => `cp${i + 1}`)]) {
      const socket = node === "tor" ? this.torSocket : this.birdSocket(Number(node.slice(2)));
      await this.#waitSocket(socket);
    }
  }

  #torConfig(): string {
    const peers = Array.from(
      { length: this.hosts },
      (_, k) => `protocol bgp cp${k + 1} from cps { neighbor ${this.cpIp(k + 1)} as ${CP_ASN}; }`,
    );
    return [
      "log stderr all;",
      "debug protocols { states };",
      `router id ${TOR_IP};`,
      "timeformat protocol iso long ms;",
      "protocol device { }",
      "protocol kernel { ipv4 { import none; export all; }; merge paths on; }",
      'protocol bfd { interface "*" { interval 100 ms; multiplier 3; }; }',
      "template bgp cps {",
      `  local ${TOR_IP} as ${TOR_ASN};`,
      "  hold time 9; keepalive time 3; connect delay time 1; error wait time 1, 5;",
      "  bfd on;",
      "  ipv4 { import all; export none; };",
      "}",
      ...peers,
      "",
    ].join("\n");
  }

  /** Starts BIRD in a namespace; with `group`, as root in that group, which owns its socket. */
  #startBird(node: string, conf: string, socket: string, group?: string): void {
    const process = new ManagedProcess(
      `bird ${node}`,
      "ip",
      [
        "netns",
        "exec",
        this.ns(node),
        "bird",
        "-f",
        ...(group ? ["-g", group] : []),
        "-c",
        conf,
        "-s",
        socket,
      ],
      `${this.dir}/bird-${node}.log`,
    );
    process.start();
    this.#birds.set(node, process);
  }

  async #waitSocket(socket: string): Promise<void> {
    await pollUntil(
      `BIRD up on ${socket}`,
      async () => (await run("birdcl", ["-s", socket, "show", "status"])).includes("Daemon is up"),
      { timeoutMs: 10_000, intervalMs: 50, retryErrors: true },
    );
  }

  /** `birdcl` against the ToR. */
  tor(...args: string[]): Promise<string> {
    return run("birdcl", ["-s", this.torSocket, ...args]);
  }

  /** The next hops of `prefix` in the ToR's kernel (sorted). */
  async torNextHops(prefix: string): Promise<string[]> {
    const out = await run("ip", ["-n", this.ns("tor"), "route", "show", prefix]).catch(() => "");
    return [...out.matchAll(/via (\S+)/g)].map((m) => m[1]!).sort();
  }

  /**
   * "Since" of each Established session at the ToR, in ms (a later value means the session was
   * re-established). BIRD converts its monotonic time to wall-clock time when it prints, so one
   * unchanged session may read 1 ms apart: compare with `sameSession`.
   */
  async torSessionsSince(): Promise<Map<string, number>> {
    const out = await this.tor("show", "protocols");
    const since = new Map<string, number>();
    for (const line of out.split("\n")) {
      const words = line.trim().split(/\s+/);
      if (/^cp\d+$/.test(words[0] ?? "") && words[1] === "BGP" && words[3] === "up") {
        since.set(words[0]!, Date.parse(`${words[4]}T${words[5]}Z`));
      }
    }
    return since;
  }

  /** Count of transitions to "up" (session established) in the ToR's log, per session. */
  async torEstablishments(): Promise<Map<string, number>> {
    const log = await Deno.readTextFile(`${this.dir}/bird-tor.log`).catch(() => "");
    const counts = new Map<string, number>();
    for (const m of log.matchAll(/\b(cp\d+): State changed to up\b/g)) {
      counts.set(m[1]!, (counts.get(m[1]!) ?? 0) + 1);
    }
    return counts;
  }

  /** Takes a host's switch port down or up (no TCP close: only timers or BFD notice). */
  async link(node: string, up: boolean): Promise<void> {
    await run("ip", [
      "-n",
      this.ns("sw"),
      "link",
      "set",
      `${this.prefix}p-${node}`,
      up ? "up" : "down",
    ]);
  }

  /**
   * A TCP "ping" from the ToR to the pod address: a one-shot server on POD_IP:7 in the worker's
   * namespace answers "pong" (no ICMP tool is needed).
   * @returns what the ToR read back
   */
  async podPing(): Promise<string> {
    const server = new ManagedProcess(
      "pod server",
      "ip",
      [
        "netns",
        "exec",
        this.ns("w1"),
        "python3",
        "-c",
        "import socket\ns=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n" +
        `s.bind(("${POD_IP}", 7)); s.listen(1); s.settimeout(10)\nc,_=s.accept(); c.sendall(b"pong\\n"); c.close()`,
      ],
      `${this.dir}/pod-server.log`,
    );
    server.start();
    try {
      const answer = () =>
        run("ip", [
          "netns",
          "exec",
          this.ns("tor"),
          "bash",
          "-c",
          `exec 3<>/dev/tcp/${POD_IP}/7 && timeout 2 head -1 <&3`,
        ]).then((out) => out.includes("pong") ? out.trim() : undefined, () => undefined);
      // no answer is an answer too: the caller says what it means
      return await pollUntil("a pong", answer, { timeoutMs: 5_000, intervalMs: 100 })
        .then(({ value }) => value, () => "");
    } finally {
      await server.stop(1000);
    }
  }

  /** Stops every BIRD it started and deletes its namespaces. */
  async destroy(): Promise<void> {
    for (const process of this.#birds.values()) await process.stop(3000).catch(() => {});
    for (const ns of this.#namespaces.reverse()) {
      await run("ip", ["netns", "del", ns]).catch(() => {});
    }
    for (const [i, dirs] of this.#shipped) {
      if (Deno.env.get("KEELSON_KEEP_E2E") === "1") {
        await run("cp", ["-a", dirs.bird, `${this.dir}/cp${i}/keelson-bird`]).catch(() => {});
      }
      await dirs[Symbol.asyncDispose]();
    }
    if (Deno.env.get("KEELSON_KEEP_E2E") !== "1") {
      await Deno.remove(this.dir, { recursive: true }).catch(() => {});
    }
  }
}
