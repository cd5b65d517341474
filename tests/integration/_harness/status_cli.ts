/**
 * `keelson status -o json` as a user runs it: the shipped program (`shipped_keelson.ts`), no
 * colour, its exit code, model and time. Shared by the integration and e2e tests that read the
 * status a user would see.
 *
 * @module
 */
import type { ClusterStatus } from "../../../src/status/cluster_status.ts";
import { keelsonCommand } from "./shipped_keelson.ts";

/** What one `keelson status` run printed. */
export interface StatusOutput {
  code: number;
  out: string;
  err: string;
  /** Its wall time, process start included (ms). */
  ms: number;
}

/**
 * Runs `keelson status ...args` as the shipped program, without colour.
 * @param args its flags
 * @returns the exit code, standard output and error, and the wall time
 */
export async function runStatus(args: string[]): Promise<StatusOutput> {
  const [executable, ...argv] = await keelsonCommand(["status", ...args]);
  const began = performance.now();
  const out = await new Deno.Command(executable!, {
    args: argv,
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  const ms = performance.now() - began;
  const text = new TextDecoder();
  return { code: out.code, out: text.decode(out.stdout), err: text.decode(out.stderr), ms };
}

/** What one `keelson status -o json` run gave. */
export interface StatusRun {
  /** 0 (healthy) or 3 (problems found). */
  code: number;
  /** The model it printed. */
  status: ClusterStatus;
  /** Its wall time, process start included (ms). */
  ms: number;
}

/**
 * Runs `keelson status -o json --kubeconfig <kubeconfig> ...args`.
 * @param kubeconfig the kubeconfig to read the cluster with
 * @param args more flags, e.g. `["--config", path]`
 * @returns the exit code, the model and the wall time
 * @throws {Error} with its standard error when it exits with anything but 0 or 3
 */
export async function statusJson(kubeconfig: string, args: string[] = []): Promise<StatusRun> {
  const run = await runStatus(["--kubeconfig", kubeconfig, "-o", "json", ...args]);
  if (run.code !== 0 && run.code !== 3) {
    throw new Error(`keelson status exited ${run.code}: ${run.err}`);
  }
  return { code: run.code, status: JSON.parse(run.out) as ClusterStatus, ms: run.ms };
}
