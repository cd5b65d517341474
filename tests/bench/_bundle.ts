/**
 * The program the compiled binary runs: `deno bundle`'s output of main.ts, which
 * scripts/compile.sh compiles. Benchmarks run this file (with `--no-config`, as the binary reads
 * no deno.json) so their figures are those of what operators deploy, not of `deno run main.ts`.
 *
 * @module
 */
import { compiledRuntimeFlags } from "../integration/_harness/permissions.ts";
import { buildBundle } from "../integration/_harness/shipped_keelson.ts";

/** A bundle in a temporary directory, removed on dispose. */
export interface Bundle extends AsyncDisposable {
  /** Path of the bundled program. */
  readonly path: string;
}

/**
 * Bundles main.ts into a temporary directory and runs it once (`keelson version`): Deno analyses
 * a module the first time it loads it from a path (swc parses the 2 MB bundle, ~30 MB of peak RSS)
 * and caches the result; the compiled binary never does that, so no measured run may be first.
 * @returns the bundle
 * @throws {Error} with deno's message when bundling fails
 */
export async function bundleKeelson(): Promise<Bundle> {
  const dir = await Deno.makeTempDir({ prefix: "keelson-bundle-" });
  const path = `${dir}/keelson.js`;
  try {
    await buildBundle(path);
  } catch (error) {
    await Deno.remove(dir, { recursive: true });
    throw error;
  }
  await new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-config", "--allow-all", path, "version"],
    stdout: "null",
    stderr: "null",
  }).output();
  return { path, [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }) };
}

/**
 * The `deno run` arguments (after permissions) that run a bundle as the compiled binary runs it:
 * no deno.json, the binary's runtime flags (V8 flags, no code cache), the bundle.
 * @param bundle from bundleKeelson
 * @returns e.g. `["--no-config", "--no-code-cache", "--v8-flags=...", "/tmp/.../keelson.js"]`
 */
export function compiledProgram(bundle: Bundle): string[] {
  return ["--no-config", ...compiledRuntimeFlags(), bundle.path];
}
