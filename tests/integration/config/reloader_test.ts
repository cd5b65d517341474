import assert from "node:assert/strict";
import { type LogRecord, reset } from "@logtape/logtape";
import { captureLogs } from "../../unit/_fakes/captured_logs.ts";
import { Registry } from "prom-client";
import { parseConfig } from "../../../src/config/parse_config.ts";
import { ConfigReloader } from "../../../src/config/reloader.ts";
import { loadInventory } from "../../../src/config/load_config.ts";
import type { Config } from "../../../src/config/types.ts";
import { holdsFor, pollUntil, settlesWithin } from "../../_support/poll.ts";

const MACHINE = '\n[[machines]]\nname = "w-1"\n';
const VALID_A = '[cluster]\nname = "a"\n' + MACHINE;
const VALID_B = '[cluster]\nname = "b"\n' + MACHINE;
const INVALID = '[cluster]\nname = "a"\n\n[[pools]]\nname = "p"\naddresses = ["10.0.0.300/24"]\n';

interface Fixture {
  path: string;
  registry: Registry;
  records: LogRecord[];
  changes: [Config, Config][];
  reloader: ConfigReloader;
  [Symbol.asyncDispose](): Promise<void>;
}

async function fixture(options: { debounceMs?: number } = {}): Promise<Fixture> {
  const records = await captureLogs();
  const dir = await Deno.makeTempDir();
  const path = `${dir}/keelson.toml`;
  await Deno.writeTextFile(path, VALID_A);
  const registry = new Registry();
  const changes: [Config, Config][] = [];
  const reloader = new ConfigReloader(path, parseConfig(VALID_A, path), {
    registry,
    debounceMs: options.debounceMs ?? 50,
    onChange: (next, previous) => void changes.push([next, previous]),
    now: () => 1_700_000_000_000,
  });
  return {
    path,
    registry,
    records,
    changes,
    reloader,
    async [Symbol.asyncDispose]() {
      await Deno.remove(dir, { recursive: true });
      await reset();
    },
  };
}

async function gauge(registry: Registry, name: string): Promise<number | undefined> {
  const metric = registry.getSingleMetric(name);
  return (await metric?.get())?.values[0]?.value;
}

/** A reload lands within a few polls of the file watcher: generous on a loaded machine. */
const RELOADED = { timeoutMs: 5_000, intervalMs: 25 };

function messages(records: LogRecord[]): string[] {
  return records.filter((r) => r.level === "error").map((r) =>
    r.message.map((part) => String(part)).join("")
  );
}

Deno.test("ConfigReloader counts the initial config as a successful load", async () => {
  await using f = await fixture();
  assert.equal(await gauge(f.registry, "keelson_config_last_reload_successful"), 1);
  assert.equal(
    await gauge(f.registry, "keelson_config_last_reload_success_timestamp_seconds"),
    1_700_000_000,
  );
  assert.equal(f.reloader.current().cluster.name, "a");
});

Deno.test("ConfigReloader.reload() keeps the last good config when the file turns invalid", async () => {
  await using f = await fixture();
  await Deno.writeTextFile(f.path, INVALID);
  assert.equal(await f.reloader.reload("test"), false);
  assert.equal(f.reloader.current().cluster.name, "a");
  assert.equal(await gauge(f.registry, "keelson_config_last_reload_successful"), 0);
  assert.deepEqual(f.changes, []);
  const logged = messages(f.records);
  assert.ok(
    logged.includes(
      `${f.path}:6: pools[0].addresses[0]: "10.0.0.300/24" is not an IP range: ` +
        '"10.0.0.300" is not an IP address; expected a CIDR ("192.0.2.0/28"), ' +
        'a range ("192.0.2.10-192.0.2.20") or one address',
    ),
    logged.join("\n"),
  );
});

Deno.test("ConfigReloader.reload() rejects a file naming a path the binary may not write", async () => {
  await using f = await fixture();
  await Deno.writeTextFile(f.path, `[keepalived]\nconfig_file = "/tmp/keelson.conf"\n${VALID_B}`);
  assert.equal(await f.reloader.reload("test"), false);
  assert.equal(f.reloader.current().cluster.name, "a");
  assert.equal(await gauge(f.registry, "keelson_config_last_reload_successful"), 0);
  assert.deepEqual(f.changes, []);
  assert.ok(
    messages(f.records).some((m) =>
      m.startsWith(`${f.path}:2: keepalived.config_file: "/tmp/keelson.conf" is outside the `)
    ),
    messages(f.records).join("\n"),
  );
});

Deno.test("ConfigReloader.reload() applies a fixed file, calls onChange and sets the metric to 1", async () => {
  await using f = await fixture();
  await Deno.writeTextFile(f.path, INVALID);
  await f.reloader.reload("test");
  await Deno.writeTextFile(f.path, VALID_B);
  assert.equal(await f.reloader.reload("test"), true);
  assert.equal(f.reloader.current().cluster.name, "b");
  assert.equal(await gauge(f.registry, "keelson_config_last_reload_successful"), 1);
  assert.equal(f.changes.length, 1);
  assert.equal(f.changes[0]![0].cluster.name, "b");
  assert.equal(f.changes[0]![1].cluster.name, "a");
});

Deno.test("ConfigReloader.reload() does not call onChange for identical content", async () => {
  await using f = await fixture();
  // same content, reformatted with a comment
  await Deno.writeTextFile(f.path, '# edited\n[cluster]\nname    = "a"\n' + MACHINE);
  assert.equal(await f.reloader.reload("test"), true);
  assert.deepEqual(f.changes, []);
});

Deno.test("ConfigReloader.reload() survives a throwing onChange", async () => {
  await using f = await fixture();
  const reloader = new ConfigReloader(f.path, parseConfig(VALID_A, f.path), {
    registry: f.registry,
    onChange: () => {
      throw new Error("boom");
    },
  });
  await Deno.writeTextFile(f.path, VALID_B);
  assert.equal(await reloader.reload("test"), true);
  assert.ok(messages(f.records).some((m) => m.includes("boom")));
});

Deno.test("ConfigReloader.run() reloads once for a burst of file changes", async () => {
  await using f = await fixture({ debounceMs: 150 });
  const controller = new AbortController();
  const running = f.reloader.run(controller.signal);
  // give the watcher a moment to start before editing
  await new Promise((r) => setTimeout(r, 100));
  for (const name of ["x", "y", "b"]) {
    await Deno.writeTextFile(f.path, `[cluster]\nname = "${name}"\n` + MACHINE);
  }
  await pollUntil("onChange", () => f.changes.length > 0, RELOADED);
  await holdsFor("one reload for the burst", () => f.changes.length === 1, { forMs: 450 });
  controller.abort();
  await running;
  assert.equal(f.changes.length, 1);
  assert.equal(f.reloader.current().cluster.name, "b");
});

Deno.test("ConfigReloader.run() notices a file replaced by rename, as editors do", async () => {
  await using f = await fixture({ debounceMs: 50 });
  const controller = new AbortController();
  const running = f.reloader.run(controller.signal);
  await new Promise((r) => setTimeout(r, 100));
  await Deno.writeTextFile(`${f.path}.swp`, VALID_B);
  await Deno.rename(`${f.path}.swp`, f.path);
  await pollUntil("onChange after the rename", () => f.changes.length === 1, RELOADED);
  controller.abort();
  await running;
  assert.equal(f.reloader.current().cluster.name, "b");
});

Deno.test("ConfigReloader.run() reloads on SIGHUP and stops on abort", async () => {
  await using f = await fixture({ debounceMs: 10_000 });
  const controller = new AbortController();
  const running = f.reloader.run(controller.signal);
  await Deno.writeTextFile(f.path, VALID_B);
  Deno.kill(Deno.pid, "SIGHUP");
  await pollUntil("the SIGHUP reload", () => f.reloader.current().cluster.name === "b", RELOADED);
  controller.abort();
  await running;
});

Deno.test("ConfigReloader.run() returns at once for an aborted signal", async () => {
  await using f = await fixture();
  await f.reloader.run(AbortSignal.abort());
  assert.equal(f.reloader.current().cluster.name, "a");
});

Deno.test("ConfigReloader.reload() rejects a file its validate hook refuses, keeping the last good one", async () => {
  await using f = await fixture();
  const reloader = new ConfigReloader(f.path, parseConfig(VALID_A, f.path), {
    registry: f.registry,
    onChange: () => assert.fail("onChange after a refused reload"),
    validate: (next, current) =>
      next.cluster.name === current.cluster.name
        ? []
        : [{ file: f.path, path: "pools", message: "would strand 203.0.113.18" }],
  });
  await Deno.writeTextFile(f.path, VALID_B);
  assert.equal(await reloader.reload("test"), false);
  assert.equal(reloader.current().cluster.name, "a");
  assert.equal(reloader.lastReloadSucceeded(), false);
  assert.equal(await gauge(f.registry, "keelson_config_last_reload_successful"), 0);
  assert.ok(messages(f.records).some((m) => m.includes("would strand 203.0.113.18")));
});

Deno.test("ConfigReloader.reload() refuses an emptied file: the inventory lists no machines", async () => {
  await using f = await fixture();
  await Deno.writeTextFile(f.path, "");
  assert.equal(await f.reloader.reload("test"), false);
  assert.equal(f.reloader.current().machines.length, 1);
  assert.ok(messages(f.records).some((m) => m.includes("the inventory lists no machines")));
});

Deno.test("ConfigReloader.reload() rejects a password_file that is a FIFO at once, and the next reload works", async () => {
  await using f = await fixture();
  const fifo = `${f.path}.fifo`;
  assert.ok((await new Deno.Command("mkfifo", { args: [fifo] }).output()).success, "mkfifo");
  const base = await Deno.readTextFile(new URL("../../unit/config/bgp/base.toml", import.meta.url));
  await Deno.writeTextFile(
    f.path,
    base.replace("bfd = true", `bfd = true\npassword_file = "${fifo}"`),
  );
  // before: this reload never finished, and every later one queued behind it
  const started = performance.now();
  assert.equal(await f.reloader.reload("test"), false);
  assert.ok(performance.now() - started < 4_000, "rejected at once, not at a deadline");
  assert.ok(
    messages(f.records).some((m) => m.includes(`cannot read "${fifo}": is not a regular file`)),
    messages(f.records).join("\n"),
  );
  assert.equal(await gauge(f.registry, "keelson_config_last_reload_successful"), 0);
  await Deno.writeTextFile(f.path, VALID_B);
  assert.equal(await f.reloader.reload("test"), true);
  assert.equal(f.reloader.current().cluster.name, "b");
});

Deno.test("ConfigReloader.run() still sees changes and stops with a FIFO next to the inventory", async () => {
  await using f = await fixture({ debounceMs: 50 });
  const controller = new AbortController();
  const running = f.reloader.run(controller.signal);
  await new Promise((r) => setTimeout(r, 100));
  // a token or password file that is a FIFO, in the inventory's directory
  const fifo = `${f.path}.token`;
  assert.ok((await new Deno.Command("mkfifo", { args: [fifo] }).output()).success, "mkfifo");
  await new Promise((r) => setTimeout(r, 100));
  await Deno.writeTextFile(`${f.path}.swp`, VALID_B);
  await Deno.rename(`${f.path}.swp`, f.path);
  // before: the watcher's thread blocked opening the FIFO, so this change was never seen
  await pollUntil("onChange after the rename", () => f.changes.length === 1, RELOADED);
  controller.abort();
  // before: run() never returned, so SIGTERM never ended the agent
  const stopped = await settlesWithin(running, 5_000);
  assert.ok(stopped, "run() did not return after the abort");
});

Deno.test("ConfigReloader.reload() logs at INFO that the file is valid again after a rejected reload, changed or not", async () => {
  await using f = await fixture();
  const infos = () =>
    f.records.filter((r) => r.level === "info").map((r) => r.message.map(String).join(""));
  const recovered = (lines: string[]) =>
    lines.filter((l) => l.startsWith("Configuration file valid again"));
  // back to the very file in force: before, only a DEBUG "unchanged" followed the ERROR
  await Deno.writeTextFile(f.path, INVALID);
  assert.equal(await f.reloader.reload("test"), false);
  await Deno.writeTextFile(f.path, VALID_A);
  assert.equal(await f.reloader.reload("file changed"), true);
  assert.deepEqual(recovered(infos()), [
    "Configuration file valid again (file changed); the rejected reload before it no longer holds",
  ]);
  // a success after a success says nothing of the kind
  assert.equal(await f.reloader.reload("test"), true);
  assert.equal(recovered(infos()).length, 1);
  // fixed with a change: said too, next to the change being applied
  await Deno.writeTextFile(f.path, INVALID);
  assert.equal(await f.reloader.reload("test"), false);
  await Deno.writeTextFile(f.path, VALID_B);
  assert.equal(await f.reloader.reload("SIGHUP"), true);
  assert.equal(recovered(infos()).length, 2);
  assert.equal(f.changes.length, 1);
});

Deno.test("ConfigReloader.inventoryInForce(): the file's SHA-256 (as sha256sum prints it) and when it took effect; a rejected or unchanged file keeps both", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/keelson.toml`;
    await Deno.writeTextFile(path, VALID_A);
    let now = 1_700_000_000_000;
    const { sha256: initial } = await loadInventory(path);
    const reloader = new ConfigReloader(path, parseConfig(VALID_A, path), {
      registry: new Registry(),
      onChange: () => {},
      now: () => now,
      initialSha256: initial,
    });
    const digestOf = async (text: string) => {
      const bytes = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
      return Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
    };
    assert.deepEqual(reloader.inventoryInForce(), {
      sha256: await digestOf(VALID_A),
      since: new Date(1_700_000_000_000),
    });
    now += 60_000;
    assert.equal(await reloader.reload("test"), true);
    assert.equal(reloader.inventoryInForce()?.since.getTime(), 1_700_000_000_000, "unchanged");
    await Deno.writeTextFile(path, INVALID);
    now += 60_000;
    assert.equal(await reloader.reload("test"), false);
    assert.equal(reloader.inventoryInForce()?.sha256, await digestOf(VALID_A), "rejected");
    // a comment is another file: every host must run the same bytes
    await Deno.writeTextFile(path, VALID_A + "# edited\n");
    now += 60_000;
    assert.equal(await reloader.reload("test"), true);
    assert.deepEqual(reloader.inventoryInForce(), {
      sha256: await digestOf(VALID_A + "# edited\n"),
      since: new Date(now),
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
    await reset();
  }
});
