/**
 * Guards of the one path an API answer takes: only the transport (`src/kube/http_transport.ts`)
 * sends a request, only the bounded reader (`src/kube/bounded_body.ts`) reads a body whole, the
 * REST client (`src/kube/rest_api.ts`) is the one that reads what the transport bounded, and the
 * read-only client is a view of it, with no request of its own.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { codeOfFiles, filesMatching } from "../../_support/typescript_files.ts";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const sources = () => codeOfFiles("src", ROOT);
const using = filesMatching;

Deno.test("only the transport sends requests and only the bounded reader reads a body whole", async () => {
  const files = await sources();
  assert.deepEqual(using(files, /(?<![.\w])fetch\(/), ["src/kube/http_transport.ts"]);
  assert.deepEqual(using(files, /\.arrayBuffer\(\)|\.json\(\)|\.bytes\(\)|\.blob\(\)/), [
    "src/kube/bounded_body.ts",
  ]);
  // a Response's text: the REST client's, of a body the transport already read within its cap
  assert.deepEqual(using(files, /response\.text\(\)/), ["src/kube/rest_api.ts"]);
});

Deno.test("the read-only client is a view of the one REST client", async () => {
  const text = (await sources()).get("src/kube/read_only_client.ts") ?? "";
  assert.match(text, /createRestApi\(/);
  assert.doesNotMatch(text, /\.fetch\(|statusError|JSON\.parse|KubeApiError/);
});
