/**
 * `keelson status -o json` as a user runs it: the shipped program (`shipped_keelson.ts`), no
 * colour, its exit code, model and time. Shared by the integration and e2e tests that read the
 * status a user would see.
 *
 * @module
 */
import type { ClusterStatus } from "../../../src/status/cluster_status.ts";
import { keelsonCommand } from "./shipped_keelson.ts";

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
  const [executable, ...argv] = await keelsonCommand([
    "status",
    "--kubeconfig",
    kubeconfig,
    "-o",
    "json",
    ...args,
  ]);
  const began = performance.now();
  const out = await new Deno.Command(executable!, {
    args: argv,
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  const ms = performance.now() - began;
  if (out.code !== 0 && out.code !== 3) {
    throw new Error(`keelson status exited ${out.code}: ${new TextDecoder().decode(out.stderr)}`);
  }
  return {
    code: out.code,
    status: JSON.parse(new TextDecoder().decode(out.stdout)) as ClusterStatus,
    ms,
  };
}
