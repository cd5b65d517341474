/**
 * Values in log messages are plain text in both formats: one level of quoting at most (the JSON
 * line's own), and no `'…'` around errors on a terminal. Runs `setupLogging` in a child process
 * so the formatters under test are exactly those `keelson run` writes stderr with.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const LOGGING = new URL("../../../src/log/logging.ts", import.meta.url).href;

/** The stderr of a process that sets up logging in `format` and logs the test's lines. */
async function stderrOf(format: "json" | "text"): Promise<string[]> {
  const script = `
    import { flushLogging, logger, setupLogging } from ${JSON.stringify(LOGGING)};
    await setupLogging({ format: ${JSON.stringify(format)} });
    const log = logger("test");
    log.error("{error}", { error: 'Cannot read kubeconfig "/etc/keelson/kubeconfig": not found' });
    log.warn("Sync of {key} failed: {error}", {
      key: "default/web",
      error: new Error('pool "public" is full'),
    });
    log.warn("Watch failed: {error}", { error: new TypeError("body is gone") });
    log.info("Retrying in {delayMs} ms ({ok})", { delayMs: 1500, ok: false });
    await flushLogging();
  `;
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--ext=ts", script],
    cwd: fileURLToPath(new URL("../../../", import.meta.url)),
    env: { JOURNAL_STREAM: "" },
    stdout: "null",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(output.stderr);
  assert.equal(output.code, 0, text);
  return text.trimEnd().split("\n");
}

Deno.test("JSON lines: a value holding quotes is in the message once, not re-quoted", async () => {
  const lines = (await stderrOf("json")).map((line) => JSON.parse(line));
  assert.deepEqual(lines.map((line) => line.message), [
    'Cannot read kubeconfig "/etc/keelson/kubeconfig": not found',
    'Sync of default/web failed: pool "public" is full',
    "Watch failed: TypeError: body is gone",
    "Retrying in 1500 ms (false)",
  ]);
  // the values themselves stay in properties, typed
  assert.equal(lines[1].properties.error, 'pool "public" is full');
  assert.equal(lines[3].properties.delayMs, 1500);
});

Deno.test("text: values are written as they are, errors never wrapped in quotes", async () => {
  const messages = (await stderrOf("text")).map((line) => line.replace(/^.*?keelson·test: /, ""));
  assert.deepEqual(messages, [
    'Cannot read kubeconfig "/etc/keelson/kubeconfig": not found',
    'Sync of default/web failed: pool "public" is full',
    "Watch failed: TypeError: body is gone",
    "Retrying in 1500 ms (false)",
  ]);
});
