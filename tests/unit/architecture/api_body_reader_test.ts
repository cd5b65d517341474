/**
 * Guards of the one path an API answer takes: only the transport (`src/kube/http_transport.ts`)
 * sends a request, only the bounded reader (`src/kube/bounded_body.ts`) reads a body whole, the
 * REST client (`src/kube/rest_api.ts`) is the one that reads what the transport bounded, and the
 * read-only client is a view of it, with no request of its own.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const SRC = fileURLToPath(new URL("../../../src/", import.meta.url));

/** Every .ts file under src/, relative to it, with its text stripped of comments. */
async function sources(dir = SRC, prefix = ""): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for await (const entry of Deno.readDir(dir)) {
    const path = `${prefix}${entry.name}`;
    if (entry.isDirectory) {
      for (const [p, t] of await sources(`${dir}${entry.name}/`, `${path}/`)) files.set(p, t);
    } else if (entry.name.endsWith(".ts")) {
      const text = await Deno.readTextFile(`${dir}${entry.name}`);
      files.set(path, text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, ""));
    }
  }
  return files;
}

/** The files whose code matches `pattern`. */
function using(files: Map<string, string>, pattern: RegExp): string[] {
  return [...files].filter(([, text]) => pattern.test(text)).map(([path]) => path).sort();
}

Deno.test("only the transport sends requests and only the bounded reader reads a body whole", async () => {
  const files = await sources();
  assert.deepEqual(using(files, /(?<![.\w])fetch\(/), ["kube/http_transport.ts"]);
  assert.deepEqual(using(files, /\.arrayBuffer\(\)|\.json\(\)|\.bytes\(\)|\.blob\(\)/), [
    "kube/bounded_body.ts",
  ]);
  // a Response's text: the REST client's, of a body the transport already read within its cap
  assert.deepEqual(using(files, /response\.text\(\)/), ["kube/rest_api.ts"]);
});

Deno.test("the read-only client is a view of the one REST client", async () => {
  const text = (await sources()).get("kube/read_only_client.ts") ?? "";
  assert.match(text, /createRestApi\(/);
  assert.doesNotMatch(text, /\.fetch\(|statusError|JSON\.parse|KubeApiError/);
});
