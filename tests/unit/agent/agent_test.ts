import assert from "node:assert/strict";
import { reset } from "@logtape/logtape";
import { runAgent } from "../../../src/agent/agent.ts";
import { captureLogs } from "../_fakes/captured_logs.ts";
import { testConfig } from "../_fakes/test_inventory.ts";
import { pollUntil } from "../../_support/poll.ts";

Deno.test("runAgent() returns 0 when stopped while waiting for a Kubernetes connection", async () => {
  const records = await captureLogs();
  const dir = await Deno.makeTempDir({ prefix: "keelson-agent-test." });
  try {
    const configPath = `${dir}/keelson.toml`;
    await Deno.writeTextFile(configPath, "");
    const config = testConfig({
      // a kubeconfig that cannot be read: the agent keeps retrying, whatever $KUBECONFIG says
      kubernetes: { kubeconfig: `${dir}/missing-kubeconfig` },
      server: { listen: "127.0.0.1:0" },
      keepalived: { enabled: false },
      machines: [{ name: "w-1", role: "worker" }],
    });
    const controller = new AbortController();
    const running = runAgent({
      configPath,
      config,
      applyFlags: (c) => c,
      host: "w-1",
      signal: controller.signal,
    });
    await pollUntil(
      "a failed connection, retried",
      () => records.some((r) => String(r.rawMessage).includes("retrying every")),
    );
    controller.abort();
    assert.equal(await running, 0);
  } finally {
    await reset();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("runAgent() logs the address it serves health and metrics on once", async () => {
  const records = await captureLogs();
  const dir = await Deno.makeTempDir({ prefix: "keelson-agent-test." });
  try {
    const configPath = `${dir}/keelson.toml`;
    await Deno.writeTextFile(configPath, "");
    const controller = new AbortController();
    const running = runAgent({
      configPath,
      config: testConfig({
        kubernetes: { kubeconfig: `${dir}/missing-kubeconfig` },
        server: { listen: "127.0.0.1:0" },
        keepalived: { enabled: false },
        machines: [{ name: "w-1", role: "worker" }],
      }),
      applyFlags: (c) => c,
      host: "w-1",
      signal: controller.signal,
    });
    const serving = () => records.filter((r) => String(r.rawMessage).startsWith("Serving health"));
    await pollUntil("the health server's address logged", () => serving().length > 0);
    // and not again while the agent retries its connection
    await pollUntil(
      "a failed connection, retried",
      () => records.some((r) => String(r.rawMessage).includes("retrying every")),
    );
    controller.abort();
    assert.equal(await running, 0);
    assert.equal(serving().length, 1, serving().map((r) => r.message.join("")).join("\n"));
  } finally {
    await reset();
    await Deno.remove(dir, { recursive: true });
  }
});
