/**
 * Finds the etcd and kube-apiserver binaries the integration tests run against, and registers
 * integration tests so that a machine without them skips loudly instead of failing silently.
 *
 * Order: `$KUBEBUILDER_ASSETS` (a directory holding both binaries), else `bash scripts/testbin.sh`
 * (which builds them once from the Go module proxy and prints the directory). With
 * `KEELSON_REQUIRE_INTEGRATION=1` (CI) missing binaries are a test failure, not a skip.
 *
 * @module
 */

/** Where the two binaries are. */
export interface Assets {
  /** Absolute path of the etcd binary. */
  etcd: string;
  /** Absolute path of the kube-apiserver binary. */
  kubeApiserver: string;
}

/** The outcome of looking for the binaries: found, or why not. */
export type AssetsResult = { ok: true; assets: Assets } | { ok: false; reason: string };

const TESTBIN_SCRIPT = new URL("../../../scripts/testbin.sh", import.meta.url).pathname;

async function isExecutable(path: string): Promise<boolean> {
  try {
    const info = await Deno.stat(path);
    return info.isFile && ((info.mode ?? 0o755) & 0o111) !== 0;
  } catch {
    return false;
  }
}

async function fromDirectory(dir: string): Promise<Assets | undefined> {
  const etcd = `${dir}/etcd`;
  const kubeApiserver = `${dir}/kube-apiserver`;
  return (await isExecutable(etcd)) && (await isExecutable(kubeApiserver))
    ? { etcd, kubeApiserver }
    : undefined;
}

async function resolveAssets(): Promise<AssetsResult> {
  const fromEnv = Deno.env.get("KUBEBUILDER_ASSETS");
  if (fromEnv) {
    const assets = await fromDirectory(fromEnv);
    if (assets) return { ok: true, assets };
    return {
      ok: false,
      reason: `KUBEBUILDER_ASSETS="${fromEnv}" does not hold executable etcd and kube-apiserver`,
    };
  }
  // testbin.sh prints the directory on stdout; its build progress (if any) goes to our stderr.
  let output: Deno.CommandOutput;
  try {
    output = await new Deno.Command("bash", {
      args: [TESTBIN_SCRIPT],
      stdin: "null",
      stdout: "piped",
      stderr: "inherit",
    }).output();
  } catch (error) {
    return { ok: false, reason: `cannot run "bash ${TESTBIN_SCRIPT}": ${String(error)}` };
  }
  if (!output.success) {
    return { ok: false, reason: `"bash ${TESTBIN_SCRIPT}" exited with code ${output.code}` };
  }
  const dir = new TextDecoder().decode(output.stdout).trim().split("\n").at(-1) ?? "";
  const assets = dir ? await fromDirectory(dir) : undefined;
  if (assets) return { ok: true, assets };
  return {
    ok: false,
    reason: `"bash ${TESTBIN_SCRIPT}" printed "${dir}", which lacks the binaries`,
  };
}

let cached: Promise<AssetsResult> | undefined;

/**
 * Looks for the binaries once per process (the answer is cached).
 * @returns the binaries, or the reason they are unavailable
 */
export function findAssets(): Promise<AssetsResult> {
  cached ??= resolveAssets();
  return cached;
}

/**
 * Whether integration tests can run on this machine.
 * @returns true when etcd and kube-apiserver were found (or built)
 */
export async function integrationAvailable(): Promise<boolean> {
  return (await findAssets()).ok;
}

/** True when CI demands the integration tests (`KEELSON_REQUIRE_INTEGRATION=1`). */
export function integrationRequired(): boolean {
  return Deno.env.get("KEELSON_REQUIRE_INTEGRATION") === "1";
}

// Resolved once when the first integration test file is loaded, so that `integrationTest` can
// decide synchronously whether to register a test as ignored.
const availability = await findAssets();

/**
 * Registers an integration test. Without the binaries it is registered as ignored and a loud
 * notice says why — unless `KEELSON_REQUIRE_INTEGRATION=1`, in which case it fails with that reason.
 * Op and resource sanitizers are off: a control plane spans child processes and HTTP clients
 * whose lifetimes the test manages itself.
 * @param name the test name (a sentence starting with the symbol under test)
 * @param fn the test body
 * @param otherMissing why another binary this test needs is unavailable (treated the same way)
 */
export function integrationTest(
  name: string,
  fn: (t: Deno.TestContext) => Promise<void>,
  otherMissing?: string,
): void {
  const missing = availability.ok ? otherMissing : availability.reason;
  if (missing !== undefined && !integrationRequired()) {
    // deno-lint-ignore no-console
    console.error(
      `\n*** SKIPPING integration test "${name}": ${missing}. ` +
        "Set KUBEBUILDER_ASSETS or install Go so scripts/testbin.sh can build the binaries. ***\n",
    );
  }
  Deno.test({
    name,
    ignore: missing !== undefined && !integrationRequired(),
    sanitizeOps: false,
    sanitizeResources: false,
    async fn(t) {
      if (missing !== undefined) {
        throw new Error(
          `Cannot run integration test: ${missing} (KEELSON_REQUIRE_INTEGRATION=1)`,
        );
      }
      await fn(t);
    },
  });
}

/**
 * The binaries, for `startControlPlane`.
 * @returns the binaries
 * @throws {Error} when they are unavailable, with the reason
 */
export async function requireAssets(): Promise<Assets> {
  const result = await findAssets();
  if (!result.ok) throw new Error(`Cannot start a control plane: ${result.reason}`);
  return result.assets;
}
