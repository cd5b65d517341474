/**
 * Runs a snippet of TypeScript with exactly the permission flags the compiled binary carries
 * (scripts/compile_permissions.txt), not the `--allow-all` of the unit tests, so a unit test can
 * show that a host call works as shipped (Deno refuses `/proc` reads, `Deno.uid()` and writes
 * outside the baked set there).
 *
 * @module
 */
import { compiledRuntimeFlags, compilePermissions } from "./permissions.ts";

/** The repository root as a file URL ending in "/", for the snippet's imports. */
export const ROOT_URL = new URL("../../../", import.meta.url).href;

/** What the snippet did. */
export interface ShippedRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `source` as a module under the baked permissions.
 * @param source the module text; import project files from `${ROOT_URL}...`
 * @param timeoutMs kills it after this long. @default 30000
 * @returns its exit code and output
 */
export async function runAsShipped(source: string, timeoutMs = 30_000): Promise<ShippedRun> {
  const dir = await Deno.makeTempDir({ prefix: "keelson-shipped-" });
  try {
    const file = `${dir}/snippet.ts`;
    await Deno.writeTextFile(file, source);
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--quiet",
        "--no-prompt",
        `--config=${new URL("deno.json", ROOT_URL).pathname}`,
        ...(await compilePermissions()),
        ...compiledRuntimeFlags(),
        file,
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(timeoutMs),
    }).output();
    const decode = (b: Uint8Array) => new TextDecoder().decode(b);
    return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
