/**
 * Annotation churn from a separate process, the way another client in the cluster makes it:
 * `deno run --allow-net --allow-read --allow-env churn.ts <collection path> <objects> <patches>
 * <concurrency>` with `KEELSON_CHURN_SERVER`, `KEELSON_CHURN_TOKEN` and `KEELSON_CHURN_CA` (a PEM
 * file) in the environment. Object i is named `<prefix>-<i>` where the prefix is the last path
 * segment's singular given as `KEELSON_CHURN_PREFIX`. Exits 0 when every patch answered 2xx.
 *
 * A separate process matters: the garbage the patching makes would otherwise change when the
 * watching process collects garbage, which is what the watch-abort test is about.
 *
 * @module
 */
import { fileURLToPath } from "node:url";

/** Path of this script, for `Deno.Command`. */
export const CHURN_SCRIPT = fileURLToPath(import.meta.url);

/** Options of `churn`. */
export interface ChurnOptions {
  /** `https://127.0.0.1:<port>`. */
  server: string;
  /** An admin bearer token. */
  token: string;
  /** The CA certificate file. */
  caFile: string;
  /** e.g. `/api/v1/namespaces/ns/configmaps`. */
  collection: string;
  /** Object names are `<prefix>-0` … `<prefix>-<objects - 1>`. */
  prefix: string;
  objects: number;
  patches: number;
  concurrency: number;
}

/**
 * Runs the churn in a child process and waits for it.
 * @param options where and how much
 * @returns the seconds it took
 * @throws {Error} when a patch failed
 */
export async function churn(options: ChurnOptions): Promise<number> {
  const began = performance.now();
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-net",
      "--allow-read",
      "--allow-env",
      CHURN_SCRIPT,
      options.collection,
      options.prefix,
      String(options.objects),
      String(options.patches),
      String(options.concurrency),
    ],
    env: {
      KEELSON_CHURN_SERVER: options.server,
      KEELSON_CHURN_TOKEN: options.token,
      KEELSON_CHURN_CA: options.caFile,
    },
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!output.success) {
    throw new Error(`churn failed: ${new TextDecoder().decode(output.stderr).slice(-2000)}`);
  }
  return (performance.now() - began) / 1000;
}

if (import.meta.main) {
  const [collection, prefix, objects, patches, concurrency] = Deno.args;
  const server = Deno.env.get("KEELSON_CHURN_SERVER")!;
  const token = Deno.env.get("KEELSON_CHURN_TOKEN")!;
  const client = Deno.createHttpClient({
    caCerts: [Deno.readTextFileSync(Deno.env.get("KEELSON_CHURN_CA")!)],
    http2: false,
  });
  const total = Number(patches);
  let next = 0;
  await Promise.all(Array.from({ length: Number(concurrency) }, async () => {
    while (next < total) {
      const n = next++;
      const response = await fetch(`${server}${collection}/${prefix}-${n % Number(objects)}`, {
        method: "PATCH",
        client,
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": "application/merge-patch+json",
        },
        body: JSON.stringify({ metadata: { annotations: { "keelson.test/churn": String(n) } } }),
      });
      const text = await response.text();
      if (!response.ok) throw new Error(`PATCH ${prefix}-${n}: ${response.status} ${text}`);
    }
  }));
  client.close();
}
