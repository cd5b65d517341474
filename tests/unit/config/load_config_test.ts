import assert from "node:assert/strict";
import { ConfigError } from "../../../src/config/config_error.ts";
import { loadConfigFile } from "../../../src/config/load_config.ts";

Deno.test("loadConfigFile() reads and validates the example inventory", async () => {
  const config = await loadConfigFile(
    new URL("../../../deploy/examples/keelson.toml", import.meta.url).pathname,
  );
  assert.equal(config.cluster.name, "dc1-prod");
});

Deno.test("loadConfigFile() turns a missing file into a ConfigError naming path and reason", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/absent.toml`;
    const error = await loadConfigFile(path).then(() => undefined, (e: unknown) => e);
    assert.ok(error instanceof ConfigError);
    assert.equal(error.issues.length, 1);
    assert.equal(
      error.format(),
      `${path}: Cannot read the configuration file: no such file or directory (os error 2)`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("loadConfigFile() reports a directory given as the file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const error = await loadConfigFile(dir).then(() => undefined, (e: unknown) => e);
    assert.ok(error instanceof ConfigError);
    assert.match(error.format(), /Cannot read the configuration file: is a directory/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("loadConfigFile() puts the path it was given into each issue", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/k.toml`, "[cluster]\nnam = 1\n");
    const error = await loadConfigFile(`${dir}/k.toml`).then(() => undefined, (e: unknown) => e);
    assert.ok(error instanceof ConfigError);
    assert.equal(error.format(), `${dir}/k.toml:2: cluster.nam: unknown key; did you mean "name"?`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
