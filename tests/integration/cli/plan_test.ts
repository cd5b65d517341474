import assert from "node:assert/strict";
import { planCommand } from "../../../src/cli/plan.ts";
import { UsageError } from "../../../src/cli/usage_error.ts";

const CONFIG = new URL("../../../deploy/examples/keelson.toml", import.meta.url).pathname;
const STATE = new URL("../../../deploy/examples/cluster-state.yaml", import.meta.url).pathname;

const ROOT = new URL("../../../", import.meta.url).pathname;

/** Runs `deno run main.ts plan ...` as a user would, capturing both streams. */
async function runCli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-env", "--allow-sys", "main.ts", "plan", ...args],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: output.code, out: decode(output.stdout), err: decode(output.stderr) };
}

Deno.test("planCommand prints JSON with nodes and services", async () => {
  const { code, out } = await runCli(["--config", CONFIG, "--state", STATE, "--output", "json"]);
  assert.equal(code, 0);
  const plan = JSON.parse(out);
  assert.equal(plan.nodes.length, 11);
  assert.ok(
    plan.services.some((s: { serviceKey: string }) => s.serviceKey === "shop/web"),
  );
});

Deno.test("planCommand rejects an unknown output format and a missing --state", async () => {
  await assert.rejects(
    planCommand(["--config", CONFIG, "--state", STATE, "-o", "xml"]),
    UsageError,
  );
  await assert.rejects(planCommand(["--config", CONFIG]), UsageError);
});

Deno.test("planCommand exits 1 naming an unreadable snapshot", async () => {
  const { code, err } = await runCli(["--config", CONFIG, "--state", "/nonexistent/state.yaml"]);
  assert.equal(code, 1);
  assert.match(err, /\/nonexistent\/state\.yaml/);
  assert.doesNotMatch(err, /^\s+at /m);
});
