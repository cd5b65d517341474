/**
 * A real kube-controller-manager against a started test control plane, running only the
 * controllers a test names (by default the garbage collector), for tests of what Kubernetes does
 * with the objects Keelson writes (owner references).
 *
 * ```ts
 * controllerManagerTest("the heartbeat goes with its Node", async () => {
 *   await using cp = await startControlPlane();
 *   await using kcm = await startControllerManager(cp);
 *   await kcm.waitForGarbageCollector();
 * });
 * ```
 *
 * The binary: `bash scripts/testbin.sh kube-controller-manager` prints its path
 * (`$KUBEBUILDER_ASSETS/kube-controller-manager` when present, as envtest asset directories
 * normally have none, else the cache beside kube-apiserver, built once from the Go module proxy).
 *
 * @module
 */
import { integrationTest } from "./assets.ts";
import type { ControlPlane } from "./control_plane.ts";
import { signedCert } from "./pki.ts";
import { freePorts, ManagedProcess } from "./process.ts";
import { waitFor } from "./wait.ts";

const TESTBIN_SCRIPT = new URL("../../../scripts/testbin.sh", import.meta.url).pathname;

/** The garbage collector's name in `--controllers` (1.28+; `garbagecollector` is its alias). */
export const GARBAGE_COLLECTOR = "garbage-collector-controller";

/** The outcome of looking for the binary: its path, or why it is unavailable. */
export type ControllerManagerBinary = { ok: true; path: string } | { ok: false; reason: string };

async function isExecutable(path: string): Promise<boolean> {
  try {
    const info = await Deno.stat(path);
    return info.isFile && ((info.mode ?? 0o755) & 0o111) !== 0;
  } catch {
    return false;
  }
}

async function resolveBinary(): Promise<ControllerManagerBinary> {
  let output: Deno.CommandOutput;
  try {
    // the path on stdout; build progress (if it must be built) on our stderr
    output = await new Deno.Command("bash", {
      args: [TESTBIN_SCRIPT, "kube-controller-manager"],
      stdin: "null",
      stdout: "piped",
      stderr: "inherit",
    }).output();
  } catch (error) {
    return { ok: false, reason: `cannot run "bash ${TESTBIN_SCRIPT}": ${String(error)}` };
  }
  if (!output.success) {
    return {
      ok: false,
      reason: `no kube-controller-manager: "bash ${TESTBIN_SCRIPT} kube-controller-manager" ` +
        `exited with code ${output.code}`,
    };
  }
  const path = new TextDecoder().decode(output.stdout).trim().split("\n").at(-1) ?? "";
  if (path && await isExecutable(path)) return { ok: true, path };
  return {
    ok: false,
    reason: `"bash ${TESTBIN_SCRIPT} kube-controller-manager" printed "${path}", not an executable`,
  };
}

let cached: Promise<ControllerManagerBinary> | undefined;

/**
 * Looks for the kube-controller-manager binary once per process (building it if it must).
 * @returns its path, or the reason it is unavailable
 */
export function findControllerManager(): Promise<ControllerManagerBinary> {
  cached ??= resolveBinary();
  return cached;
}

// Resolved when a test file importing this module loads, so `controllerManagerTest` can decide
// synchronously whether to register its test as ignored.
const availability = await findControllerManager();

/**
 * Registers an integration test that also needs kube-controller-manager: skipped loudly without
 * it, or failed with the reason under `KEELSON_REQUIRE_INTEGRATION=1` (CI), as `integrationTest`
 * treats missing etcd or kube-apiserver.
 * @param name the test name
 * @param fn the test body
 */
export function controllerManagerTest(
  name: string,
  fn: (t: Deno.TestContext) => Promise<void>,
): void {
  integrationTest(name, fn, availability.ok ? undefined : availability.reason);
}

/** Options of `startControllerManager`. */
export interface ControllerManagerOptions {
  /** `--controllers`. @default [GARBAGE_COLLECTOR] */
  controllers?: string[];
  /** More flags. @default [] */
  args?: string[];
  /** Directory for the log and the serving certificate. @default the control plane's */
  dir?: string;
  /** How long it may take to answer `/healthz`. @default 60_000 */
  startTimeoutMs?: number;
}

/** A running kube-controller-manager. Stop it with `stop()` or `await using`. */
export class ControllerManager implements AsyncDisposable {
  /** The child process (pid, log). */
  readonly process: ManagedProcess;
  /** Its secure port's URL, `https://127.0.0.1:<port>`. */
  readonly url: string;
  /** `performance.now()` when it was started. */
  readonly startedAt: number;
  /** Milliseconds from start until `/healthz` answered 200. */
  healthyMs = 0;

  /** @internal use `startControllerManager` */
  constructor(process: ManagedProcess, url: string, startedAt: number) {
    this.process = process;
    this.url = url;
    this.startedAt = startedAt;
  }

  /** The log so far ("" while unreadable). */
  log(): Promise<string> {
    return Deno.readTextFile(this.process.logPath).catch(() => "");
  }

  /**
   * Waits until the garbage collector has started collecting (its resource monitors synced, or
   * it gave up waiting for some and proceeds anyway, as it logs).
   * @param timeoutMs the bound
   * @returns milliseconds from the process start until then
   * @throws {Error} with the log tail when that does not happen in time or the process exited
   */
  async waitForGarbageCollector(timeoutMs = 120_000): Promise<number> {
    let outcome: "collecting" | "exited";
    try {
      outcome = await waitFor(async () => {
        if (!this.process.running) return "exited";
        return /Proceeding to collect garbage/.test(await this.log()) ? "collecting" : undefined;
      }, { timeoutMs, intervalMs: 50, message: "the garbage collector to start collecting" });
    } catch (error) {
      throw new Error(
        `${String(error)}\nkube-controller-manager log tail:\n${await this.process.logTail()}`,
      );
    }
    if (outcome === "exited") {
      const tail = await this.process.logTail();
      throw new Error(
        `kube-controller-manager exited before its garbage collector started; log tail:\n${tail}`,
      );
    }
    return performance.now() - this.startedAt;
  }

  /** Stops it by pid (SIGTERM, then SIGKILL after the grace period). Safe to call twice. */
  async stop(graceMs = 10_000): Promise<void> {
    await this.process.stop(graceMs);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}

/**
 * Starts kube-controller-manager against `cp` as its admin, with only `options.controllers`,
 * leader election off, serving on a free loopback port with a certificate of the test CA, and
 * waits until `/healthz` answers 200.
 * @param cp a started control plane
 * @param options controllers, flags, directory, timeout
 * @returns the running process
 * @throws {Error} when the binary is missing or it does not become healthy (with the log tail)
 */
export async function startControllerManager(
  cp: ControlPlane,
  options: ControllerManagerOptions = {},
): Promise<ControllerManager> {
  const binary = await findControllerManager();
  if (!binary.ok) throw new Error(`Cannot start kube-controller-manager: ${binary.reason}`);
  const dir = options.dir ?? cp.dir;
  // signedCert signs with the CA in the control plane's directory
  const certName = `kube-controller-manager-${crypto.randomUUID().slice(0, 8)}`;
  await signedCert(
    cp.dir,
    certName,
    "/CN=kube-controller-manager",
    "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n" +
      "keyUsage=critical,digitalSignature,keyEncipherment\n",
  );
  const [port] = freePorts(1) as [number];
  const kubeconfig = cp.tokenKubeconfigPath;
  const process = new ManagedProcess("kube-controller-manager", binary.path, [
    `--kubeconfig=${kubeconfig}`,
    // delegated authentication/authorization of its own endpoints, as kubeadm sets them up
    `--authentication-kubeconfig=${kubeconfig}`,
    `--authorization-kubeconfig=${kubeconfig}`,
    `--controllers=${(options.controllers ?? [GARBAGE_COLLECTOR]).join(",")}`,
    "--leader-elect=false",
    "--bind-address=127.0.0.1",
    `--secure-port=${port}`,
    `--cert-dir=${dir}`,
    `--tls-cert-file=${cp.dir}/${certName}.crt`,
    `--tls-private-key-file=${cp.dir}/${certName}.key`,
    "--profiling=false",
    "--v=2",
    ...(options.args ?? []),
  ], `${dir}/kube-controller-manager.log`);
  const startedAt = performance.now();
  process.start();
  const kcm = new ControllerManager(process, `https://127.0.0.1:${port}`, startedAt);
  const client = Deno.createHttpClient({ caCerts: [cp.caPem], http2: false });
  try {
    const outcome = await waitFor(async () => {
      if (!process.running) return "exited";
      const response = await fetch(`${kcm.url}/healthz`, {
        client,
        signal: AbortSignal.timeout(2000),
      });
      await response.body?.cancel();
      return response.status === 200 ? "healthy" : undefined;
    }, {
      timeoutMs: options.startTimeoutMs ?? 60_000,
      message: "kube-controller-manager /healthz",
    });
    if (outcome === "exited") {
      throw new Error(`it exited with code ${(await process.exited()).code}`);
    }
    kcm.healthyMs = performance.now() - startedAt;
    return kcm;
  } catch (error) {
    const tail = await process.logTail();
    await kcm.stop();
    throw new Error(`Cannot start kube-controller-manager: ${String(error)}\nlog tail:\n${tail}`);
  } finally {
    client.close();
  }
}
