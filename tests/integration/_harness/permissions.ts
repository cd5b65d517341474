/**
 * The permission flags scripts/compile.sh bakes into the binary, so tests can run Keelson with
 * exactly those and nothing more.
 *
 * @module
 */
const PERMISSIONS_FILE = new URL("../../../scripts/compile_permissions.txt", import.meta.url);

/**
 * Reads scripts/compile_permissions.txt the way compile.sh does: one flag per line, `#` comments.
 * @returns the flags, e.g. `["--allow-net", "--allow-sys=hostname", ...]`
 * @throws {Deno.errors.NotFound} when the file is missing
 */
export async function compilePermissions(): Promise<string[]> {
  const text = await Deno.readTextFile(PERMISSIONS_FILE);
  return text.split("\n").map((line) => line.replace(/#.*/, "").trim()).filter((l) => l !== "");
}
