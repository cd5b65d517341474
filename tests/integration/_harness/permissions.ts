/**
 * The permission flags and V8 flags scripts/compile.sh bakes into the binary, so tests can run
 * Keelson with exactly those and nothing more.
 *
 * @module
 */
const PERMISSIONS_FILE = new URL("../../../scripts/compile_permissions.txt", import.meta.url);
const V8_FLAGS_FILE = new URL("../../../scripts/compile_v8_flags.txt", import.meta.url);

function flagLines(text: string): string[] {
  return text.split("\n").map((line) => line.replace(/#.*/, "").trim()).filter((l) => l !== "");
}

/**
 * The `deno run` flags that make a run behave as the compiled binary does: the V8 flags of
 * scripts/compile_v8_flags.txt, and no V8 code cache (compile.sh passes `--no-code-cache`: the
 * cache costs a long-running agent 3–6 MB of RSS to save ~20 ms once at start, and a binary
 * under systemd's ProtectSystem has nowhere to write it).
 * @returns e.g. `["--no-code-cache", "--v8-flags=--max-semi-space-size=2"]`
 * @throws {Deno.errors.NotFound} when the file is missing
 */
export function compiledRuntimeFlags(): string[] {
  const flags = flagLines(Deno.readTextFileSync(V8_FLAGS_FILE));
  return ["--no-code-cache", ...(flags.length > 0 ? [`--v8-flags=${flags.join(",")}`] : [])];
}

/**
 * Reads scripts/compile_permissions.txt the way compile.sh does: one flag per line, `#` comments.
 * @returns the flags, e.g. `["--allow-net", "--allow-sys=hostname", ...]`
 * @throws {Deno.errors.NotFound} when the file is missing
 */
export async function compilePermissions(): Promise<string[]> {
  return flagLines(await Deno.readTextFile(PERMISSIONS_FILE));
}
