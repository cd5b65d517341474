import assert from "node:assert/strict";
import { reset } from "@logtape/logtape";
import { runAgent } from "../../../src/agent/agent.ts";
import { EXIT_HOST_SIDE_STOPPED, watchHostSide } from "../../../src/agent/host_side_failure.ts";
import type { CloudProvider } from "../../../src/cloud/provider.ts";
import { HealthChecks } from "../../../src/server/health_checks.ts";
import { captureLogs } from "../_fakes/captured_logs.ts";
import { testConfig } from "../_fakes/test_inventory.ts";
import { pollUntil } from "../../_support/poll.ts";

function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => resolve = r);
  return { promise, resolve };
}

Deno.test("watchHostSide(): a host side that stops on its own fails the health checks, stops the agent and makes it exit 1", async () => {
  const records = await captureLogs();
  try {
    const health = new HealthChecks();
    const stopped = deferred<Error>();
    const agentSignal = new AbortController();
    const watch = watchHostSide(stopped.promise, agentSignal.signal, health);
    assert.equal(health.evaluate().ok, true);
    assert.equal(watch.code(0), 0);
    stopped.resolve(new Error("Keelson's keepalived side stopped: boom"));
    await stopped.promise;
    await Promise.resolve();
    assert.ok(watch.signal.aborted, "the agent is told to stop");
    const report = health.evaluate();
    assert.equal(report.ok, false);
    assert.deepEqual(report.results.find((r) => r.name === "hostSide"), {
      name: "hostSide",
      ok: false,
      reason: "Keelson's keepalived side stopped: boom",
      excluded: false,
    });
    assert.equal(watch.code(0), EXIT_HOST_SIDE_STOPPED);
    assert.equal(EXIT_HOST_SIDE_STOPPED, 1);
    const fatal = records.filter((r) => r.level === "fatal");
    assert.equal(fatal.length, 1);
    assert.equal(fatal[0]!.properties.error, "Keelson's keepalived side stopped: boom");
  } finally {
    await reset();
  }
});

Deno.test("watchHostSide(): a host side that ends after the agent's stop signal is no failure", async () => {
  const health = new HealthChecks();
  const stopped = deferred<Error>();
  const agentSignal = new AbortController();
  const watch = watchHostSide(stopped.promise, agentSignal.signal, health);
  agentSignal.abort();
  stopped.resolve(new Error("stopped while stopping"));
  await stopped.promise;
  await Promise.resolve();
  assert.equal(watch.signal.aborted, false);
  assert.equal(health.evaluate().ok, true);
  assert.equal(watch.code(0), 0);
  // no host side at all: healthy, nothing to watch
  const none = watchHostSide(undefined, new AbortController().signal, new HealthChecks());
  assert.equal(none.code(0), 0);
});

Deno.test("runAgent() stops and returns 1 when the provider's host side stops on its own", async () => {
  const records = await captureLogs();
  const dir = await Deno.makeTempDir({ prefix: "keelson-agent-test." });
  try {
    const configPath = `${dir}/keelson.toml`;
    await Deno.writeTextFile(configPath, "");
    const config = testConfig({
      // no Kubernetes connection: the agent waits in connect(), where the stop must reach it
      kubernetes: { kubeconfig: `${dir}/missing-kubeconfig` },
      server: { listen: "127.0.0.1:0" },
      keepalived: { enabled: false },
      machines: [{ name: "w-1", role: "worker" }],
    });
    const stopped = deferred<Error>();
    let hostSignal: AbortSignal | undefined;
    const fake: CloudProvider = {
      providerName: "baremetal",
      hasClusterID: () => true,
      startHost: ({ signal }) => {
        hostSignal = signal;
        const finished = new Promise<void>((resolve) =>
          signal.addEventListener("abort", () => resolve(), { once: true })
        );
        return Promise.resolve({ finished, stopped: stopped.promise });
      },
    };
    const agentSignal = new AbortController();
    const running = runAgent({
      configPath,
      config,
      applyFlags: (c) => c,
      host: "w-1",
      signal: agentSignal.signal,
      provider: () => fake,
    });
    await pollUntil(
      "the agent waiting in connect()",
      () => records.some((r) => String(r.rawMessage).includes("retrying every")),
    );
    stopped.resolve(new Error("Keelson's BIRD side stopped: a fake failure"));
    const code = await Promise.race([
      running,
      new Promise((resolve) => setTimeout(() => resolve("still running after 20 s"), 20_000)),
    ]);
    agentSignal.abort(); // only for the case it is still running
    assert.equal(code, 1);
    assert.ok(hostSignal?.aborted, "the host side was told to stop");
    assert.ok(
      records.some((r) =>
        r.level === "fatal" && r.properties.error === "Keelson's BIRD side stopped: a fake failure"
      ),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
    await reset();
  }
});
