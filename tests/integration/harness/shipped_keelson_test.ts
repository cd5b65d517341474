/**
 * The tests' one way to start Keelson runs it as it ships: a bundle with `--no-config` and
 * exactly the baked permission and V8 flags, never `--allow-all`; and its shell form survives
 * `sh -c` word for word.
 */
import assert from "node:assert/strict";
import { compiledRuntimeFlags, compilePermissions } from "../_harness/permissions.ts";
import { keelsonCommand, shellCommand } from "../_harness/shipped_keelson.ts";

Deno.test("keelsonCommand runs a bundle with exactly the baked flags", async () => {
  const argv = await keelsonCommand(["run", "--config", "/x/keelson.toml"], {
    entry: "/b/keelson.js",
  });
  assert.deepEqual(argv, [
    Deno.execPath(),
    "run",
    "--no-prompt",
    ...(await compilePermissions()),
    ...compiledRuntimeFlags(),
    "--no-config",
    "/b/keelson.js",
    "run",
    "--config",
    "/x/keelson.toml",
  ]);
  assert.ok(!argv.includes("--allow-all") && !argv.includes("-A"));
  assert.ok(argv.some((a) => a.startsWith("--allow-write=")), "the baked write set is narrow");
});

Deno.test("keelsonCommand's permissions option replaces the baked ones, nothing else", async () => {
  const argv = await keelsonCommand(["version"], {
    entry: "/b/keelson.js",
    permissions: ["--allow-read"],
  });
  assert.deepEqual(argv.slice(0, 4), [Deno.execPath(), "run", "--no-prompt", "--allow-read"]);
  for (const flag of await compilePermissions()) {
    if (flag !== "--allow-read") assert.ok(!argv.includes(flag), flag);
  }
});

Deno.test("shellCommand quotes every word so sh -c passes it unchanged", async () => {
  const words = ["printf", "%s\\n", "plain", "with space", "it's", '"dq"', "$HOME", "a;b", "*", ""];
  const out = await new Deno.Command("sh", {
    args: ["-c", shellCommand(words)],
    stdout: "piped",
    env: { HOME: "/should-not-expand" },
  }).output();
  assert.ok(out.success);
  assert.deepEqual(new TextDecoder().decode(out.stdout).split("\n").slice(0, -1), words.slice(2));
});
