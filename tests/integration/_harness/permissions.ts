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
 * The `deno run` flag that sets the V8 flags of scripts/compile_v8_flags.txt, as compile.sh does.
 * @returns e.g. `["--v8-flags=--max-semi-space-size=2"]`, or `[]` when the file lists none
 * @throws {Deno.errors.NotFound} when the file is missing
 */
export function compileV8Flags(): string[] {
  const flags = flagLines(Deno.readTextFileSync(V8_FLAGS_FILE));
  return flags.length > 0 ? [`--v8-flags=${flags.join(",")}`] : [];
}

/**
 * Reads scripts/compile_permissions.txt the way compile.sh does: one flag per line, `#` comments.
 * @returns the flags, e.g. `["--allow-net", "--allow-sys=hostname", ...]`
 * @throws {Deno.errors.NotFound} when the file is missing
 */
export async function compilePermissions(): Promise<string[]> {
  return flagLines(await Deno.readTextFile(PERMISSIONS_FILE));
}
