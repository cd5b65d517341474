/** Golden-file comparison for the import tests (KEELSON_UPDATE_GOLDEN=1 rewrites the files). */
import assert from "node:assert/strict";

const UPDATE = Deno.env.get("KEELSON_UPDATE_GOLDEN") === "1";

/** The test data directory. */
export const DATA = new URL("./testdata/", import.meta.url);

/** Reads a file of the test data directory. */
export const readData = (name: string): Promise<string> => Deno.readTextFile(new URL(name, DATA));

/**
 * Compares `text` with the golden file, or rewrites it under KEELSON_UPDATE_GOLDEN=1.
 * @param name the file below testdata/
 * @param text what the translation wrote
 */
export async function golden(name: string, text: string): Promise<void> {
  const url = new URL(name, DATA);
  if (UPDATE) await Deno.writeTextFile(url, text);
  assert.equal(text, await Deno.readTextFile(url), `${name} differs (KEELSON_UPDATE_GOLDEN=1)`);
}
