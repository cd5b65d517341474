/**
 * `keelson run` as a child process, the way systemd runs it, for tests that need the whole
 * agent: leader election between processes, reloads, RBAC.
 *
 * @module
 */
import { fileURLToPath } from "node:url";
import { compiledRuntimeFlags } from "./permissions.ts";
import { freePorts, ManagedProcess } from "./process.ts";

const MAIN = fileURLToPath(new URL("../../../main.ts", import.meta.url));

/** Options of `startKeelson`. */
export interface KeelsonProcessOptions {
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
  /** Permission flags for `deno run`, e.g. the compile permissions. @default ["--allow-all"] */
  permissions?: string[];
  /**
   * The program to run instead of main.ts: a bundle (`deno bundle` output), run with
   * `--no-config` as the compiled binary reads no deno.json. @default main.ts
   */
  entry?: string;
  /**
   * `deno run` flags besides permissions (V8 flags, code cache).
   * @default compiledRuntimeFlags() (what the compiled binary carries)
   */
  runtimeFlags?: string[];
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
 * Starts `deno run main.ts run` with its own health/metrics port and the V8 flags of the
 * compiled binary.
 * @param options config, kubeconfig, host and extra flags
 * @returns the process; wait for `get("/healthz")` before using it
 */
export function startKeelson(options: KeelsonProcessOptions): KeelsonProcess {
  const [port] = freePorts(1);
  const host = options.host ?? "test-host";
  const args = [
    "run",
    ...(options.permissions ?? ["--allow-all"]),
    // the V8 flags the compiled binary carries, so memory and speed are measured as deployed
    ...(options.runtimeFlags ?? compiledRuntimeFlags()),
    ...(options.entry ? ["--no-config", options.entry] : [MAIN]),
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
    Deno.execPath(),
    args,
    `${options.dir}/keelson-${options.name ?? host}.log`,
  );
  process.start();
  return new KeelsonProcess(process, `http://127.0.0.1:${port}`);
}
