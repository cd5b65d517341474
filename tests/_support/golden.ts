/**
 * Golden files: a rendered text compared byte for byte with the file checked in beside the test.
 * `KEELSON_UPDATE_GOLDEN=1` rewrites the files instead (then review the diff); it is the only
 * switch for every golden file.
 *
 * @module
 */
import assert from "node:assert/strict";

/** The environment variable that rewrites golden files instead of comparing them. */
export const UPDATE_GOLDEN_ENV = "KEELSON_UPDATE_GOLDEN";

/**
 * Asserts that `text` equals the golden file, or rewrites it under `KEELSON_UPDATE_GOLDEN=1`.
 * @param file the golden file
 * @param text what the code rendered
 */
export async function assertGolden(file: URL, text: string): Promise<void> {
  if (Deno.env.get(UPDATE_GOLDEN_ENV) === "1") await Deno.writeTextFile(file, text);
  assert.equal(text, await Deno.readTextFile(file), `golden file ${file.pathname} differs`);
}
