/**
 * `keelson run` as a child process, the way systemd runs it, for tests that need the whole
 * agent: leader election between processes, reloads, RBAC. What runs is Keelson as it ships
 * (shipped_keelson.ts): the bundle with the binary's baked permission and V8 flags.
 *
 * @module
 */
import { parse as parseToml } from "smol-toml";
import { freePorts, ManagedProcess } from "./process.ts";
import { keelsonCommand, type KeelsonCommandOptions } from "./shipped_keelson.ts";

/** Options of `startKeelson`; by default the shipped bundle with the baked flags, as root. */
export interface KeelsonProcessOptions extends KeelsonCommandOptions {
  /** Inventory file. */
  configPath: string;
  /** kubeconfig file (`--kubeconfig`). */
  kubeconfig?: string;
  /** Machine name of this host (`--host`). @default "test-host" */
  host?: string;
  /** More flags for `keelson run`. */
  args?: string[];
  /** Directory for the log file. */
  dir: string;
  /** Name used for the log file. @default the host */
  name?: string;
}

/** A running keelson. */
export class KeelsonProcess implements AsyncDisposable {
  readonly process: ManagedProcess;
  /** Base URL of its health and metrics server. */
  readonly url: string;

  /** @param process the child @param url its server */
  constructor(process: ManagedProcess, url: string) {
    this.process = process;
    this.url = url;
  }

  /** GET a path of the health/metrics server; undefined while it does not answer. */
  async get(path: string): Promise<{ status: number; body: string } | undefined> {
    try {
      const response = await fetch(`${this.url}${path}`, { signal: AbortSignal.timeout(2000) });
      return { status: response.status, body: await response.text() };
    } catch {
      return undefined;
    }
  }

  /**
   * The value of one sample of `/metrics`, e.g. `leader_election_master_status{name="keelson"}`.
   * @returns the value, or undefined when absent or the server is down
   */
  async metric(sample: string): Promise<number | undefined> {
    const response = await this.get("/metrics");
    if (!response || response.status !== 200) return undefined;
    for (const line of response.body.split("\n")) {
      if (line.startsWith(sample + " ")) return Number(line.slice(sample.length + 1));
    }
    return undefined;
  }

  /**
   * Replaces its inventory in one rename (the reloader never reads half a file), then SIGHUP.
   * @param path the inventory it runs with
   * @param text the new inventory
   */
  async reload(path: string, text: string): Promise<void> {
    await Deno.writeTextFile(`${path}.new`, text);
    await Deno.rename(`${path}.new`, path);
    this.process.kill("SIGHUP");
  }

  /** The log so far. */
  log(): Promise<string> {
    return Deno.readTextFile(this.process.logPath).catch(() => "");
  }

  /** Stops with SIGTERM (SIGKILL after the grace period). */
  async stop(graceMs = 20_000): Promise<void> {
    await this.process.stop(graceMs);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}

/**
 * Starts `keelson run` as it ships (the bundle, the binary's permission and V8 flags; optionally
 * as the unprivileged test user) with its own health/metrics port.
 * @param options config, kubeconfig, host, extra flags and what runs it
 * @returns the process; wait for `get("/healthz")` before using it
 */
export async function startKeelson(options: KeelsonProcessOptions): Promise<KeelsonProcess> {
  // the command first: it may build the bundle, and the port should be fresh when it starts
  const [executable, ...command] = await keelsonCommand([], options);
  const [port] = freePorts(1);
  const host = options.host ?? "test-host";
  await ensureMachine(options.configPath, host);
  const args = [
    ...command,
    "run",
    "--config",
    options.configPath,
    "--host",
    host,
    "--listen",
    `127.0.0.1:${port}`,
    "--log-format",
    "json",
    ...(options.kubeconfig ? ["--kubeconfig", options.kubeconfig] : []),
    ...(options.args ?? []),
  ];
  const process = new ManagedProcess(
    `keelson ${host}`,
    executable!,
    args,
    `${options.dir}/keelson-${options.name ?? host}.log`,
  );
  process.start();
  return new KeelsonProcess(process, `http://127.0.0.1:${port}`);
}

/**
 * Adds a worker machine named `host` to the inventory at `path` when it names none: `keelson run`
 * refuses a host that is no machine of its inventory, and tests run many agents as bystanders
 * (leader election, Services) that drive neither keepalived nor BIRD, as a worker machine does.
 * A host the inventory already lists (a control-plane machine) is left as the test wrote it.
 * @param path the inventory file
 * @param host the agent's `--host`
 */
export async function ensureMachine(path: string, host: string): Promise<void> {
  const text = await Deno.readTextFile(path);
  let machines: unknown;
  try {
    machines = parseToml(text).machines;
  } catch {
    return; // a test of an invalid file: run refuses it for its own reason
  }
  if (Array.isArray(machines) && machines.some((m) => m?.name === host)) return;
  await Deno.writeTextFile(path, `${text}\n[[machines]]\nname = "${host}"\nrole = "worker"\n`);
}
