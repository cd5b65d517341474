import assert from "node:assert/strict";
import { parseAllDocuments } from "yaml";
import { parseConfig } from "../../../src/config/parse_config.ts";

const MANIFEST = new URL("../../../deploy/kubernetes/keelson.yaml", import.meta.url);
const EXAMPLE = new URL("../../../deploy/examples/keelson.toml", import.meta.url);

/** Whether a `[server] listen` address is reachable only from this host. */
function loopbackOnly(listen: string): boolean {
  return /^(127\.|\[::1\]:|localhost:)/.test(listen);
}

Deno.test("every shipped inventory that listens beyond loopback puts /metrics behind a token", async () => {
  const docs = parseAllDocuments(await Deno.readTextFile(MANIFEST)).map((d) => d.toJS());
  const configMap = docs.find((d) => d?.kind === "ConfigMap" && d.metadata?.name === "keelson");
  assert.ok(configMap, "deploy/kubernetes/keelson.yaml holds the keelson ConfigMap");
  const inventories = [
    ["deploy/kubernetes/keelson.yaml", String(configMap.data["keelson.toml"])],
    ["deploy/examples/keelson.toml", await Deno.readTextFile(EXAMPLE)],
  ];
  for (const [name, text] of inventories) {
    const config = parseConfig(text!, name!);
    if (loopbackOnly(config.server.listen)) continue;
    assert.ok(
      config.server.metrics_token_file,
      `${name} listens on ${config.server.listen} without [server] metrics_token_file`,
    );
  }
  // the Deployment mounts the token where the inventory names it
  const deployment = docs.find((d) => d?.kind === "Deployment");
  const mounts = deployment.spec.template.spec.containers[0].volumeMounts as {
    mountPath: string;
  }[];
  assert.ok(mounts.some((m) => m.mountPath === "/etc/keelson/metrics"));
});
