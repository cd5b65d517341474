/**
 * A real keepalived VRRP lab in network namespaces:
 * a bridge in its own namespace, one namespace per control-plane node (10.250.0.11-13 on
 * eth0), keepalived per node with its own pid files. Nothing is added to the host namespace.
 * Everything a lab starts is stopped by pid and its namespaces deleted in `close()`.
 *
 * A lab for Keelson as it ships (`shipped`) puts each node's keepalived file and track files
 * (with the notify FIFO) in directories under the binary's baked write paths, owned by the
 * unprivileged test user, and its work dir is readable by that user (inventory, pid files).
 *
 * @module
 */
import { type ControlPlane, startControlPlane } from "../integration/_harness/control_plane.ts";
import { writeKubeconfig } from "../integration/_harness/kubeconfig.ts";
import {
  keelsonCommand,
  readableByTestUser,
  shellCommand,
  type ShippedDirs,
  shippedDirs,
} from "../integration/_harness/shipped_keelson.ts";
import { pollUntil, settlesWithin } from "../_support/poll.ts";
import { forward } from "./_tcp_forward.ts";

const encoder = new TextEncoder();
const FAKE_APISERVER = new URL("./_fake_apiserver.py", import.meta.url).pathname;

/** Prints a line to stdout (figures the e2e tests measure). */
export function report(line: string): void {
  Deno.stdout.writeSync(encoder.encode(`${line}\n`));
}

/**
 * Why e2e tests cannot run here (not root, or one of `bins` missing), or undefined when they can.
 * @param bins the programs the test needs
 * @returns the reason
 */
export function e2eUnavailable(bins: readonly string[] = ["keepalived", "ip"]): string | undefined {
  if (Deno.uid() !== 0) return "not root";
  for (const bin of bins) {
    const found = ["/usr/sbin", "/usr/bin", "/sbin", "/bin"].some((d) => {
      try {
        return Deno.statSync(`${d}/${bin}`).isFile;
      } catch {
        return false;
      }
    });
    if (!found) return `${bin} is not installed`;
  }
  return undefined;
}

/**
 * Says loudly that an e2e test is skipped and why, or throws with KEELSON_REQUIRE_E2E=1 (a machine
 * that must run it).
 * @param what the test as its messages name it ("BGP e2e test")
 * @param reason why it cannot run here, or undefined when it can
 * @returns `reason`, for the test's `ignore`
 */
export function skipLoudly(what: string, reason: string | undefined): string | undefined {
  if (reason === undefined) return undefined;
  if (Deno.env.get("KEELSON_REQUIRE_E2E") === "1") {
    throw new Error(`${what} cannot run (${reason}) and KEELSON_REQUIRE_E2E=1`);
  }
  report(`SKIPPING ${what}: ${reason} (set KEELSON_REQUIRE_E2E=1 to fail)`);
  return reason;
}

/** Runs a command, throwing with its stderr when it fails. */
export async function run(cmd: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (out.code !== 0) {
    throw new Error(
      `${cmd} ${args.join(" ")} exited ${out.code}: ${new TextDecoder().decode(out.stderr)}`,
    );
  }
  return text;
}

/** Sleeps `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** One lab: namespaces, a work dir and the processes started in it. */
export class KeepalivedLab {
  readonly prefix: string;
  readonly nodes: string[];
  readonly dir: string;
  /** First three octets of the lab's /24 (nodes are .11, .12, ...). */
  readonly subnet: string;
  #namespaces: string[] = [];
  #children: Deno.ChildProcess[] = [];
  #hostLinks: string[] = [];
  #shipped = new Map<string, ShippedDirs>();
  #forwarders: { close(): void }[] = [];
  #controlPlanes: ControlPlane[] = [];
  /** keepalived parent per node. */
  readonly keepalived = new Map<string, Deno.ChildProcess>();

  private constructor(prefix: string, nodes: string[], dir: string, subnet: string) {
    this.prefix = prefix;
    this.nodes = nodes;
    this.dir = dir;
    this.subnet = subnet;
  }

  /**
   * Creates the bridge namespace and one namespace per node (n1 = 10.250.0.11, ...).
   * @param tag unique per test, part of every namespace name
   * @param count number of nodes
   * @param options `prefix` of the namespace names (default `kle2e<pid><tag>`); `subnet`, the
   *   first three octets of the lab's /24 (default `10.250.0`); `shipped`, Keelson's files under
   *   the baked write paths for an unprivileged Keelson (needs root)
   * @returns the lab
   */
  static async create(
    tag: string,
    count = 3,
    options: { prefix?: string; subnet?: string; shipped?: boolean } = {},
  ): Promise<KeepalivedLab> {
    const prefix = options.prefix ?? `kle2e${Deno.pid % 100000}${tag}`;
    const subnet = options.subnet ?? "10.250.0";
    const existing = await run("ip", ["netns", "list"]);
    if (existing.split("\n").some((l) => l.startsWith(`${prefix}-`))) {
      throw new Error(`Namespaces ${prefix}-* already exist`);
    }
    const nodes = Array.from({ length: count }, (_, i) => `n${i + 1}`);
    const lab = new KeepalivedLab(
      prefix,
      nodes,
      await Deno.makeTempDir({ prefix: `${prefix}.` }),
      subnet,
    );
    try {
      // the unprivileged Keelson reads its inventory and keepalived's pid files here
      await Deno.chmod(lab.dir, 0o755);
      if (options.shipped) {
        for (const node of nodes) lab.#shipped.set(node, await shippedDirs());
      }
      const sw = lab.ns("sw");
      await lab.#addNamespace(sw);
      await run("ip", ["-n", sw, "link", "add", "br0", "type", "bridge"]);
      await run("ip", ["-n", sw, "link", "set", "br0", "up"]);
      for (const [i, node] of nodes.entries()) {
        const ns = lab.ns(node);
        await lab.#addNamespace(ns);
        await run("ip", [
          "-n",
          sw,
          "link",
          "add",
          `p-${node}`,
          "type",
          "veth",
          "peer",
          "name",
          "eth0",
          "netns",
          ns,
        ]);
        await run("ip", ["-n", sw, "link", "set", `p-${node}`, "master", "br0", "up"]);
        await run("ip", ["-n", ns, "link", "set", "lo", "up"]);
        await run("ip", ["-n", ns, "addr", "add", `${subnet}.${11 + i}/24`, "dev", "eth0"]);
        await run("ip", ["-n", ns, "link", "set", "eth0", "up"]);
        await Deno.mkdir(`${lab.dir}/${node}`);
      }
    } catch (error) {
      await lab.close();
      throw error;
    }
    return lab;
  }

  /**
   * Adds a management network beside the VRRP segment, as hosts often have: a second bridge
   * `br1` in the bridge namespace, `eth1` in each node namespace with `<subnet>.11`, `.12`, ...
   * and a veth `<prefix>h` in the host namespace with `<subnet>.1/24` (for a service the nodes
   * reach on the host, such as a kube-apiserver). Cutting a node's VRRP port (`setVrrpPort`) then
   * leaves its management traffic alone. Deleting the bridge namespace deletes every pair.
   * @param subnet first three octets of the management /24
   * @returns the host's address on it
   */
  async addManagementNetwork(subnet: string): Promise<string> {
    const hostSide = `${this.prefix}h`;
    if (hostSide.length > 15) throw new Error(`Interface name ${hostSide} is too long`);
    const sw = this.ns("sw");
    await run("ip", ["-n", sw, "link", "add", "br1", "type", "bridge"]);
    await run("ip", ["-n", sw, "link", "set", "br1", "up"]);
    for (const [i, node] of this.nodes.entries()) {
      const ns = this.ns(node);
      await run("ip", [
        "-n",
        sw,
        "link",
        "add",
        `m-${node}`,
        "type",
        "veth",
        "peer",
        "name",
        "eth1",
        "netns",
        ns,
      ]);
      await run("ip", ["-n", sw, "link", "set", `m-${node}`, "master", "br1", "up"]);
      await run("ip", ["-n", ns, "addr", "add", `${subnet}.${11 + i}/24`, "dev", "eth1"]);
      await run("ip", ["-n", ns, "link", "set", "eth1", "up"]);
    }
    await run("ip", [
      "link",
      "add",
      hostSide,
      "type",
      "veth",
      "peer",
      "name",
      "m-host",
      "netns",
      sw,
    ]);
    this.#hostLinks.push(hostSide);
    await run("ip", ["-n", sw, "link", "set", "m-host", "master", "br1", "up"]);
    await run("ip", ["addr", "add", `${subnet}.1/24`, "dev", hostSide]);
    await run("ip", ["link", "set", hostSide, "up"]);
    return `${subnet}.1`;
  }

  /**
   * Starts a real kube-apiserver that the nodes reach over a management network
   * (`addManagementNetwork`): it listens on loopback in the host namespace, its certificate names
   * the host's address on that network, and a TCP forwarder there carries the nodes' connections to
   * it. `close()` stops the forwarder and the apiserver.
   * @param subnet first three octets of the management /24
   * @returns the control plane, and the agents' kubeconfig (that address, the admin token),
   *   readable by the test user
   */
  async startControlPlane(subnet: string): Promise<{ cp: ControlPlane; kubeconfig: string }> {
    const hostIp = await this.addManagementNetwork(subnet);
    const cp = await startControlPlane({ extraServingIps: [hostIp] });
    this.#controlPlanes.push(cp);
    const apiPort = Number(new URL(cp.server).port);
    this.#forwarders.push(forward(hostIp, apiPort, apiPort));
    const kubeconfig = `${this.dir}/agents.kubeconfig`;
    await writeKubeconfig(kubeconfig, `https://${hostIp}:${apiPort}`, cp.caPem, "admin", {
      token: cp.adminToken,
    });
    await readableByTestUser(kubeconfig);
    return { cp, kubeconfig };
  }

  /**
   * Starts a stand-in kube-apiserver in every node's namespace (`_fake_apiserver.py`: HTTPS
   * `/readyz` on 127.0.0.1:6443 with a self-signed certificate; 500 while `<node dir>/fail`
   * exists) and waits up to 30 s for each to answer, so a probe starts from a healthy apiserver.
   * Needs openssl, python3 and curl.
   */
  async startStandInApiservers(): Promise<void> {
    const cert = `${this.dir}/apiserver.crt`;
    const key = `${this.dir}/apiserver.key`;
    await run("openssl", [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-days",
      "1",
      "-subj",
      "/CN=kube-apiserver",
      "-addext",
      "subjectAltName=IP:127.0.0.1",
      "-keyout",
      key,
      "-out",
      cert,
    ]);
    for (const node of this.nodes) {
      const d = this.nodeDir(node);
      this.spawn("sh", [
        "-c",
        `exec ip netns exec ${this.ns(node)} python3 ${FAKE_APISERVER} 127.0.0.1 6443 ` +
        `${d}/fail ${cert} ${key} >> ${d}/apiserver.log 2>&1`,
      ]);
    }
    for (const node of this.nodes) {
      await pollUntil(
        `${node}'s stand-in apiserver`,
        () =>
          this.inNamespace(node, ["curl", "-sSk", "-m", "2", "https://127.0.0.1:6443/readyz"])
            .then(() => true, () => false),
        { timeoutMs: 30_000, intervalMs: 50 },
      );
    }
  }

  /** Runs a command inside a node's namespace. @returns its stdout */
  inNamespace(node: string, args: string[]): Promise<string> {
    return run("ip", ["netns", "exec", this.ns(node), ...args]);
  }

  /**
   * Opens or closes a node's port on the VRRP bridge. Closed (STP state disabled), the node's
   * carrier stays up but nothing passes: a partition, which gives VRRP a split brain.
   * @param node the node
   * @param open forward (true) or drop everything (false)
   */
  async setVrrpPort(node: string, open: boolean): Promise<void> {
    await run("ip", [
      "netns",
      "exec",
      this.ns("sw"),
      "bridge",
      "link",
      "set",
      "dev",
      `p-${node}`,
      "state",
      open ? "3" : "0",
    ]);
  }

  /** Namespace name of a node (or "sw"). */
  ns(node: string): string {
    return `${this.prefix}-${node}`;
  }

  /** Work directory of a node. */
  nodeDir(node: string): string {
    return `${this.dir}/${node}`;
  }

  /** keepalived's config file of a node, which Keelson writes. */
  confFile(node: string): string {
    return `${this.#shipped.get(node)?.keepalived ?? this.nodeDir(node)}/keelson.conf`;
  }

  /** `track_file_dir` of a node: Keelson's track files and keepalived's notify FIFO. */
  trackDir(node: string): string {
    return this.#shipped.get(node)?.track ?? this.nodeDir(node);
  }

  /** keepalived's parent pid file of a node. */
  pidFile(node: string): string {
    return `${this.nodeDir(node)}/keepalived.pid`;
  }

  /**
   * A node's `[keepalived]` table: its file, pid file and track directory in this lab, VRRP on
   * eth0.
   * @param options `enabled: false` turns keepalived off, the paths kept
   * @returns the lines, ending in a blank one
   */
  keepalivedSettings(node: string, options: { enabled?: boolean } = {}): string[] {
    return [
      "[keepalived]",
      ...(options.enabled === false ? ["enabled = false"] : []),
      `config_file = "${this.confFile(node)}"`,
      `pid_file = "${this.pidFile(node)}"`,
      `track_file_dir = "${this.trackDir(node)}"`,
      'interface = "eth0"\n',
    ];
  }

  /** A node's inventory, which its Keelson runs with. */
  inventoryPath(node: string): string {
    return `${this.nodeDir(node)}/keelson.toml`;
  }

  /** Writes a node's inventory (`inventoryPath`), readable by the test user. */
  async writeInventory(node: string, text: string): Promise<void> {
    await Deno.writeTextFile(this.inventoryPath(node), text);
    await readableByTestUser(this.inventoryPath(node));
  }

  /**
   * `keelson run` of a node as it ships, unprivileged, with the node's inventory and JSON logs
   * (building the bundle on first use: build it before a clock starts).
   * @param host the machine name (`--host`)
   */
  keelsonRunCommand(node: string, host: string): Promise<string[]> {
    return keelsonCommand(
      ["run", "--config", this.inventoryPath(node), "--host", host, "--log-format", "json"],
      { unprivileged: true },
    );
  }

  /**
   * Runs `command` (`keelsonRunCommand`) in a node's namespace with a clean environment (no
   * KUBECONFIG, no in-cluster variables), its output appended to `<node dir>/keelson.log`.
   * @returns the process, stopped in `close()`
   */
  spawnKeelson(node: string, command: readonly string[]): Deno.ChildProcess {
    const env = [`PATH=${Deno.env.get("PATH") ?? "/usr/sbin:/usr/bin:/sbin:/bin"}`, "NO_COLOR=1"];
    return this.spawn("sh", [
      "-c",
      `exec env -i ${env.join(" ")} ip netns exec ${this.ns(node)} ${shellCommand(command)} ` +
      `>> ${this.nodeDir(node)}/keelson.log 2>&1`,
    ]);
  }

  /**
   * Starts the shipped Keelson of a node with its inventory (`writeInventory` first):
   * `keelsonRunCommand` run by `spawnKeelson`.
   * @param host the machine name (`--host`)
   * @returns the process, stopped in `close()`
   */
  async startKeelson(node: string, host: string): Promise<Deno.ChildProcess> {
    return this.spawnKeelson(node, await this.keelsonRunCommand(node, host));
  }

  /** Starts keepalived in a node's namespace (VRRP only, foreground, own pid files). */
  startKeepalived(node: string): Deno.ChildProcess {
    const d = this.nodeDir(node);
    // `exec` all the way down: the child's pid is the keepalived parent itself. -G: no syslog.
    // This machine has no /dev/log, and keepalived retries it for every line (open, socket,
    // failed connect): with -D and 1000 VIPs that stalled the VRRP loop for seconds and split the
    // VIPs between hosts, an artifact of the lab, not of keepalived under journald.
    const child = this.spawn("sh", [
      "-c",
      `exec ip netns exec ${this.ns(node)} keepalived -n -l -D -G -P -f ${this.confFile(node)} ` +
      `-p ${this.pidFile(node)} -r ${d}/vrrp.pid -c ${d}/checker.pid >> ${d}/keepalived.log 2>&1`,
    ]);
    this.keepalived.set(node, child);
    return child;
  }

  /** Spawns a process this lab will stop by pid in `close()`. */
  spawn(cmd: string, args: string[]): Deno.ChildProcess {
    const child = new Deno.Command(cmd, { args, stdin: "null", stdout: "null", stderr: "null" })
      .spawn();
    this.#children.push(child);
    return child;
  }

  /** The VRRP child's pid of a node. */
  async vrrpPid(node: string): Promise<number> {
    return Number((await Deno.readTextFile(`${this.nodeDir(node)}/vrrp.pid`)).trim());
  }

  /** Addresses on a node's eth0. */
  async addresses(node: string): Promise<Set<string>> {
    const out = await run("ip", ["-n", this.ns(node), "-j", "addr", "show", "dev", "eth0"]);
    const links = JSON.parse(out) as { addr_info?: { local?: string }[] }[];
    return new Set(links.flatMap((l) => (l.addr_info ?? []).map((a) => a.local ?? "")));
  }

  /** For each VIP, the nodes holding it. */
  async holders(vips: readonly string[]): Promise<Map<string, string[]>> {
    const held = await Promise.all(this.nodes.map((n) => this.addresses(n)));
    return new Map(vips.map((v) => [v, this.nodes.filter((_, i) => held[i]!.has(v))]));
  }

  /**
   * Polls every 20 ms until `predicate` holds.
   * @returns milliseconds it took
   * @throws {Error} after `timeoutMs`
   */
  async waitFor(
    what: string,
    predicate: (holders: Map<string, string[]>) => boolean,
    vips: readonly string[],
    timeoutMs = 15_000,
  ): Promise<number> {
    const placed = async () => predicate(await this.holders(vips));
    const waited = await pollUntil(what, placed, {
      timeoutMs,
      intervalMs: 20,
      context: async () => JSON.stringify([...await this.holders(vips)]),
    });
    return waited.ms;
  }

  /**
   * Stops every process by pid (TERM, then KILL), deletes the namespaces and the work dir, and
   * stops the control plane it started.
   */
  async close(): Promise<void> {
    for (const forwarder of this.#forwarders) forwarder.close();
    for (const child of this.#children) {
      try {
        child.kill("SIGTERM");
      } catch { /* already gone */ }
    }
    for (const child of this.#children) {
      const done = await settlesWithin(child.status, 3000);
      if (!done) {
        try {
          child.kill("SIGKILL");
        } catch { /* already gone */ }
        await child.status;
      }
    }
    for (const link of this.#hostLinks) await run("ip", ["link", "del", link]).catch(() => {});
    for (const ns of [...this.#namespaces].reverse()) {
      await run("ip", ["netns", "del", ns]).catch(() => {});
    }
    const keep = Deno.env.get("KEELSON_E2E_KEEP_LOGS") === "1";
    for (const [node, dirs] of this.#shipped) {
      if (keep) {
        await run("cp", ["-a", dirs.keepalived, `${this.nodeDir(node)}/keelson-conf.d`]).catch(
          () => {},
        );
      }
      await dirs[Symbol.asyncDispose]();
    }
    if (keep) report(`logs kept in ${this.dir}`);
    else await Deno.remove(this.dir, { recursive: true }).catch(() => {});
    for (const cp of this.#controlPlanes) await cp.stop();
  }

  async #addNamespace(ns: string): Promise<void> {
    await run("ip", ["netns", "add", ns]);
    this.#namespaces.push(ns);
  }
}

/**
 * One host in one network namespace, for the tests that start keepalived, BIRD and Keelson by
 * hand: `eth0` at `<subnet>.11/24` (one end of a veth pair inside the namespace: this kernel has
 * no dummy interfaces) and a work directory readable by the test user (inventory, pid files,
 * logs). `close()` stops what it spawned or was handed, deletes the namespace and the work
 * directory (kept with KEELSON_E2E_KEEP_LOGS=1).
 */
export class OneHostNamespace {
  readonly ns: string;
  readonly work: string;
  #children: Deno.ChildProcess[] = [];
  #namespace = false;

  private constructor(ns: string, work: string) {
    this.ns = ns;
    this.work = work;
  }

  /**
   * @param ns the namespace's name
   * @param subnet first three octets of eth0's /24
   * @param workPrefix of the work directory's name
   */
  static async create(ns: string, subnet: string, workPrefix: string): Promise<OneHostNamespace> {
    const host = new OneHostNamespace(ns, await Deno.makeTempDir({ prefix: workPrefix }));
    try {
      await Deno.chmod(host.work, 0o755);
      await run("ip", ["netns", "add", ns]);
      host.#namespace = true;
      await run("ip", ["-n", ns, "link", "set", "lo", "up"]);
      await run("ip", ["-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0p"]);
      await run("ip", ["-n", ns, "link", "set", "eth0p", "up"]);
      await run("ip", ["-n", ns, "addr", "add", `${subnet}.11/24`, "dev", "eth0"]);
      await run("ip", ["-n", ns, "link", "set", "eth0", "up"]);
    } catch (error) {
      await host.close();
      throw error;
    }
    return host;
  }

  /** Runs `sh -c script` (`args` as its $0, $1, ...), stopped in `close()`. */
  spawn(script: string, ...args: string[]): Deno.ChildProcess {
    return this.track(new Deno.Command("sh", { args: ["-c", script, ...args] }).spawn());
  }

  /** Has `close()` stop a process started elsewhere. @returns the process */
  track(child: Deno.ChildProcess): Deno.ChildProcess {
    this.#children.push(child);
    return child;
  }

  /**
   * Starts keepalived in the namespace (VRRP only, foreground, no syslog) with
   * `<work>/keepalived.conf`, which the test writes, and its pid files in the work directory
   * (`keepalived.pid` the parent's, which is the returned process itself).
   * @param log the file its output is appended to
   */
  startKeepalived(log: string): Deno.ChildProcess {
    const w = this.work;
    return this.spawn(
      `exec ip netns exec ${this.ns} keepalived -n -l -D -G -P -f ${w}/keepalived.conf ` +
        `-p ${w}/keepalived.pid -r ${w}/vrrp.pid -c ${w}/checker.pid >> ${log} 2>&1`,
    );
  }

  /** Stops every process (SIGTERM, awaited), deletes the namespace and the work directory. */
  async close(): Promise<void> {
    for (const child of this.#children) {
      try {
        child.kill("SIGTERM");
      } catch { /* already gone */ }
      await child.status;
    }
    if (this.#namespace) await run("ip", ["netns", "delete", this.ns]).catch(() => {});
    if (Deno.env.get("KEELSON_E2E_KEEP_LOGS") === "1") report(`logs kept in ${this.work}`);
    else await Deno.remove(this.work, { recursive: true });
  }
}
