/**
 * Every object of deploy/rbac.yaml and deploy/kubernetes/*.yaml passes a server-side dry run
 * (`?dryRun=All&fieldValidation=Strict`: schema, unknown fields, defaulting, validation and
 * admission, nothing stored) against a real kube-apiserver, and the inventory the Deployment's
 * ConfigMap carries passes `keelson check`.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { integrationTest, startControlPlane } from "./_harness/control_plane.ts";
import {
  createObject,
  describeObject,
  loadManifests,
  type ManifestObject,
} from "./_harness/manifests.ts";

const DEPLOY = fileURLToPath(new URL("../../deploy/", import.meta.url));
const MAIN = fileURLToPath(new URL("../../main.ts", import.meta.url));

async function manifestFiles(): Promise<string[]> {
  const files = [`${DEPLOY}rbac.yaml`];
  for await (const entry of Deno.readDir(`${DEPLOY}kubernetes`)) {
    if (entry.isFile && /\.ya?ml$/.test(entry.name)) {
      files.push(`${DEPLOY}kubernetes/${entry.name}`);
    }
  }
  return files.sort();
}

integrationTest(
  "deploy manifests: every object passes a strict server-side dry run on a real apiserver",
  async (t) => {
    await using cp = await startControlPlane();
    const files = await manifestFiles();
    const all: Array<{ file: string; object: ManifestObject }> = [];
    for (const file of files) {
      for (const object of await loadManifests(file)) all.push({ file, object });
    }
    const kinds = new Set(all.map(({ object }) => object.kind));
    for (const kind of ["ServiceAccount", "ClusterRole", "Deployment", "ConfigMap"]) {
      assert.ok(kinds.has(kind), `expected a ${kind} among ${files.join(", ")}`);
    }
    // ServiceAccount first, as `kubectl apply` users would create them.
    all.sort((a, b) =>
      Number(b.object.kind === "ServiceAccount") - Number(a.object.kind === "ServiceAccount")
    );
    for (const { file, object } of all) {
      const name = `${file.slice(DEPLOY.length)}: ${describeObject(object)}`;
      await t.step(name, async () => {
        const response = await createObject(cp, object, true);
        assert.equal(response.status, 201, `${name}: ${JSON.stringify(response.body)}`);
        const created = response.body as { metadata?: { name?: string } };
        assert.equal(created.metadata?.name, object.metadata.name);
      });
    }

    await t.step("nothing was stored by the dry run", async () => {
      const response = await cp.request("GET", "/apis/apps/v1/namespaces/kube-system/deployments");
      assert.equal(response.status, 200);
      assert.deepEqual((response.body as { items: unknown[] }).items, []);
    });

    await t.step(
      "the Deployment's ConfigMap holds an inventory keelson check accepts",
      async () => {
        const configMaps = all.filter(({ object }) => object.kind === "ConfigMap");
        assert.ok(configMaps.length > 0);
        const dir = await Deno.makeTempDir({ prefix: "keelson-manifests-" });
        try {
          for (const { object } of configMaps) {
            const data = object.data as Record<string, string>;
            const toml = data["keelson.toml"];
            assert.ok(toml, `${describeObject(object)} has no keelson.toml`);
            await Deno.writeTextFile(`${dir}/keelson.toml`, toml);
            const output = await new Deno.Command(Deno.execPath(), {
              args: ["run", "--allow-all", MAIN, "check", "--config", `${dir}/keelson.toml`],
              stdout: "piped",
              stderr: "piped",
            }).output();
            const text = new TextDecoder().decode(output.stderr) +
              new TextDecoder().decode(output.stdout);
            assert.equal(output.code, 0, text);
          }
        } finally {
          await Deno.remove(dir, { recursive: true });
        }
      },
    );
  },
);
