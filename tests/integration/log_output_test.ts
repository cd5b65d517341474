/**
 * Log output that fails never takes Keelson with it. `keelson run`, as it ships (the bundle with
 * the permission and V8 flags baked into the binary), against a real kube-apiserver:
 *
 * - stdout and stderr closed by their reader (journald stopped, `keelson run | head`): over 10 s
 *   it uses little CPU and its RSS does not grow, a new LoadBalancer Service gets its address,
 *   the lost lines are counted, and SIGTERM ends it within the stop bound. (Before: a loop of
 *   failed writes, each logged as an unhandled rejection, took a core, grew the heap and starved
 *   the SIGTERM handler.)
 * - stderr a pipe nobody reads, filled by `-v 4` logging under Service churn: the agent keeps
 *   serving (new Service addressed, /healthz 200), counts the dropped lines, and SIGTERM ends it
 *   within the bound. (Before: the exit waited for stderr to be drained.)
 * - under systemd (JOURNAL_STREAM naming its stderr) each line starts with its syslog priority.
 *
 * Figures are printed with a `FIGURE` prefix.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { churn } from "./_harness/churn.ts";
import { type ControlPlane, integrationTest, startControlPlane } from "./_harness/control_plane.ts";
import {
  createLbService,
  createNamespace,
  figure,
  ingressIps,
  lbInventory,
  waitIngress,
} from "./_harness/lb_services.ts";
import { compiledRuntimeFlags, compilePermissions } from "./_harness/permissions.ts";
import { freePorts } from "./_harness/process.ts";
import { waitFor } from "./_harness/wait.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** README "Stopping": the whole stop sequence within 15 s (the unit's TimeoutStopSec is 20 s). */
const STOP_BOUND_MS = 15_000;
/** The window CPU and memory are measured over. */
const WINDOW_MS = 10_000;
/** Generous bounds for a loaded machine; the fixed agent measures about 1 % and 0–3 MB. */
const MAX_CPU_SHARE = 0.2;
const MAX_RSS_GROWTH_MB = 30;
const LEADER = 'leader_election_master_status{name="keelson"}';
const DROPPED = (reason: string) => `keelson_log_lines_dropped_total{reason="${reason}"}`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const decoder = new TextDecoder();

/** Builds the program as compile.sh does before wrapping it (`deno bundle`). */
async function bundle(dir: string): Promise<string> {
  const output = `${dir}/keelson.js`;
  const result = await new Deno.Command(Deno.execPath(), {
    args: ["bundle", "--quiet", "--output", output, "main.ts"],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(result.code, 0, `deno bundle failed:\n${decoder.decode(result.stderr)}`);
  return output;
}

/** One `keelson run` of the bundle with the baked flags and its stdio as pipes. */
class Agent {
  readonly child: Deno.ChildProcess;
  readonly url: string;

  constructor(child: Deno.ChildProcess, url: string) {
    this.child = child;
    this.url = url;
  }

  /** The value of one `/metrics` sample, or undefined when absent or not answering. */
  async metric(sample: string): Promise<number | undefined> {
    const body = await this.get("/metrics");
    for (const line of body?.text.split("\n") ?? []) {
      if (line.startsWith(sample + " ")) return Number(line.slice(sample.length + 1));
    }
    return undefined;
  }

  async get(path: string): Promise<{ status: number; text: string } | undefined> {
    try {
      const response = await fetch(`${this.url}${path}`, { signal: AbortSignal.timeout(3000) });
      return { status: response.status, text: await response.text() };
    } catch {
      return undefined;
    }
  }

  /** CPU seconds (user + system) and resident memory in MB, from /proc. */
  usage(clockTicks: number): { cpuSeconds: number; rssMb: number } {
    const stat = Deno.readTextFileSync(`/proc/${this.child.pid}/stat`);
    // the fields after the command name, which is in parentheses and may hold spaces
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15)
    const status = Deno.readTextFileSync(`/proc/${this.child.pid}/status`);
    const rssKb = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]);
    return { cpuSeconds: ticks / clockTicks, rssMb: rssKb / 1024 };
  }

  /** SIGTERM, then the exit: its code and how long it took (undefined: still running). */
  async sigterm(): Promise<{ code: number | undefined; ms: number }> {
    const began = performance.now();
    this.child.kill("SIGTERM");
    let timer: ReturnType<typeof setTimeout> | undefined;
    const status = await Promise.race([
      this.child.status,
      new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), STOP_BOUND_MS + 5_000);
      }),
    ]);
    clearTimeout(timer);
    return { code: status?.code, ms: performance.now() - began };
  }

  /** Ends the process whatever its state (the test's cleanup). */
  async kill(): Promise<void> {
    try {
      this.child.kill("SIGKILL");
    } catch {
      // exited already
    }
    await this.child.status;
  }
}

async function startAgent(
  program: string,
  configPath: string,
  kubeconfig: string,
  args: string[],
  stdio: { stdout: "piped" | "null"; stderr: "piped" | "null" },
  env: Record<string, string> = {},
): Promise<Agent> {
  const [port] = freePorts(1);
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...await compilePermissions(),
      ...compiledRuntimeFlags(),
      "--no-config",
      program,
      "run",
      "--config",
      configPath,
      "--kubeconfig",
      kubeconfig,
      "--host",
      "cp-1",
      "--listen",
      `127.0.0.1:${port}`,
      ...args,
    ],
    // only what systemd gives a service, so no JOURNAL_STREAM or KEELSON_* of the test's own
    clearEnv: true,
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: "/nonexistent", ...env },
    stdin: "null",
    ...stdio,
  }).spawn();
  return new Agent(child, `http://127.0.0.1:${port}`);
}

/** Reads a pipe into memory until `stop()`, which closes the read end. */
function pump(
  stream: ReadableStream<Uint8Array>,
): { text: () => string; stop: () => Promise<void> } {
  const reader = stream.getReader();
  let text = "";
  const reading = (async () => {
    for (;;) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (done) return;
      text = (text + decoder.decode(value)).slice(-200_000);
    }
  })();
  return {
    text: () => text,
    stop: async () => {
      await reader.cancel();
      await reading;
    },
  };
}

async function waitLeader(agent: Agent, log: () => string): Promise<void> {
  try {
    await waitFor(async () => (await agent.metric(LEADER)) === 1, {
      timeoutMs: 60_000,
      intervalMs: 200,
      message: "the agent to lead",
    });
  } catch (error) {
    figure(`agent log:\n${log().slice(-3000)}`);
    throw error;
  }
}

async function clockTicks(): Promise<number> {
  const output = await new Deno.Command("getconf", { args: ["CLK_TCK"], stdout: "piped" })
    .output();
  return Number(decoder.decode(output.stdout).trim()) || 100;
}

integrationTest(
  "keelson run, as it ships, keeps working and stops on SIGTERM when its stdout and stderr are closed or not read",
  async (t) => {
    const dir = await Deno.makeTempDir({ prefix: "keelson-log-output-" });
    await using cp = await startControlPlane();
    try {
      const program = await bundle(dir);
      const configPath = `${dir}/keelson.toml`;
      await Deno.writeTextFile(
        configPath,
        lbInventory({ pools: [{ name: "lan", addresses: ["192.0.2.0/24"] }] }),
      );
      const ticks = await clockTicks();

      await t.step("stdout and stderr closed by their reader", async () => {
        await closedOutput(cp, program, configPath, ticks);
      });
      await t.step("stderr a pipe nobody reads", async () => {
        await stalledOutput(cp, program, configPath);
      });
    } finally {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
);

async function closedOutput(
  cp: ControlPlane,
  program: string,
  configPath: string,
  ticks: number,
): Promise<void> {
  const agent = await startAgent(program, configPath, cp.tokenKubeconfigPath, [], {
    stdout: "piped",
    stderr: "piped",
  });
  const stderr = pump(agent.child.stderr);
  try {
    await waitLeader(agent, stderr.text);
    // the readers go away: every later write to either fails with EPIPE
    await agent.child.stdout.cancel();
    await stderr.stop();

    const before = agent.usage(ticks);
    const began = performance.now();
    await createNamespace(cp, "closed");
    await createLbService(cp, "closed", "after-close");
    const addressed = await waitIngress(cp, "closed", "after-close", WINDOW_MS)
      .then(({ service, ms }) => ({ ips: ingressIps(service), ms }))
      .catch((error: Error) => ({ ips: [] as string[], ms: NaN, error: error.message }));
    await sleep(Math.max(0, WINDOW_MS - (performance.now() - began)));
    const after = agent.usage(ticks);
    const seconds = (performance.now() - began) / 1000;
    const cpuShare = (after.cpuSeconds - before.cpuSeconds) / seconds;
    const rssGrowth = after.rssMb - before.rssMb;
    const dropped = await agent.metric(DROPPED("closed"));
    const health = await agent.get("/healthz");
    figure(
      `closed stdout/stderr: CPU ${(cpuShare * 100).toFixed(1)} % of a core over ` +
        `${seconds.toFixed(1)} s, RSS ${before.rssMb.toFixed(1)} -> ${
          after.rssMb.toFixed(1)
        } MB, ` +
        `new Service addressed after ${(addressed.ms / 1000).toFixed(2)} s, ` +
        `${dropped} lines dropped (closed)`,
    );
    const stop = await agent.sigterm();
    figure(`closed stdout/stderr: SIGTERM to exit ${stop.ms.toFixed(0)} ms, code ${stop.code}`);

    assert.ok(
      cpuShare < MAX_CPU_SHARE,
      `CPU ${(cpuShare * 100).toFixed(1)} % of a core with closed output`,
    );
    assert.ok(rssGrowth < MAX_RSS_GROWTH_MB, `RSS grew ${rssGrowth.toFixed(1)} MB in ${seconds} s`);
    assert.equal(
      addressed.ips.length,
      1,
      `the new Service got no address: ${JSON.stringify(addressed)}`,
    );
    assert.equal(health?.status, 200, "/healthz answers 200");
    assert.ok(
      (dropped ?? 0) > 0,
      `lines written after the close are counted as dropped: ${dropped}`,
    );
    assert.ok(stop.code !== undefined && stop.ms < STOP_BOUND_MS, `still running after SIGTERM`);
    assert.equal(stop.code, 0, "a clean stop");
  } finally {
    await agent.kill();
  }
}

async function stalledOutput(cp: ControlPlane, program: string, configPath: string): Promise<void> {
  // -v 4: every sync of a work queue logs a line (upstream's "Finished syncing")
  const agent = await startAgent(program, configPath, cp.tokenKubeconfigPath, ["-v", "4"], {
    stdout: "null",
    stderr: "piped",
  });
  try {
    // never read: once the pipe (64 KiB) is full, each write blocks until someone reads
    await waitLeader(agent, () => "(stderr is not read in this test)");
    await createNamespace(cp, "stalled");
    const services = 20;
    for (let i = 0; i < services; i++) await createLbService(cp, "stalled", `svc-${i}`);
    for (let i = 0; i < services; i++) await waitIngress(cp, "stalled", `svc-${i}`, 30_000);
    // each annotation change is a sync, and each sync a log line
    let patches = 0;
    const full = async () => (await agent.metric(DROPPED("full")) ?? 0) > 0;
    for (let round = 0; round < 5 && !await full(); round++) {
      await churn({
        server: cp.server,
        token: cp.adminToken,
        caFile: `${cp.dir}/ca.crt`,
        collection: "/api/v1/namespaces/stalled/services",
        prefix: "svc",
        objects: services,
        patches: 3_000,
        concurrency: 8,
      });
      patches += 3_000;
    }
    const dropped = await agent.metric(DROPPED("full"));
    figure(`unread stderr: ${dropped} lines dropped (full) after ${patches} Service patches`);

    const created = performance.now();
    await createLbService(cp, "stalled", "after-stall");
    const addressed = await waitIngress(cp, "stalled", "after-stall", 30_000)
      .then(({ service }) => ingressIps(service))
      .catch(() => [] as string[]);
    const addressedMs = performance.now() - created;
    const health = await agent.get("/healthz");
    figure(`unread stderr: new Service addressed after ${(addressedMs / 1000).toFixed(2)} s`);
    const stop = await agent.sigterm();
    figure(`unread stderr: SIGTERM to exit ${stop.ms.toFixed(0)} ms, code ${stop.code}`);

    assert.ok((dropped ?? 0) > 0, `dropped lines counted: ${dropped}`);
    assert.equal(addressed.length, 1, "the new Service got its address");
    assert.equal(health?.status, 200, "/healthz answers 200");
    assert.ok(stop.code !== undefined && stop.ms < STOP_BOUND_MS, "still running after SIGTERM");
    assert.equal(stop.code, 0, "a clean stop");
  } finally {
    await agent.kill();
    await agent.child.stderr.cancel().catch(() => {});
  }
}

Deno.test("under systemd (JOURNAL_STREAM names its stderr) every line of keelson run starts with its syslog priority", async () => {
  const dir = await Deno.makeTempDir({ prefix: "keelson-journal-" });
  try {
    const program = await bundle(dir);
    const configPath = `${dir}/keelson.toml`;
    await Deno.writeTextFile(
      configPath,
      lbInventory({ pools: [{ name: "lan", addresses: ["192.0.2.0/24"] }] }),
    );
    // a kubeconfig the agent refuses at once: an error line, retried every 10 s
    const kubeconfig = `${dir}/kubeconfig`;
    await Deno.writeTextFile(
      kubeconfig,
      `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`,
    );
    /** Runs the agent with stderr appended to `logPath` until its error line, then SIGTERM. */
    const run = async (logPath: string, journalStream: string): Promise<string[]> => {
      const [port] = freePorts(1);
      const child = new Deno.Command("bash", {
        args: [
          "-c",
          'exec "$0" "$@" 2>>"$KEELSON_TEST_LOG"',
          Deno.execPath(),
          "run",
          ...await compilePermissions(),
          ...compiledRuntimeFlags(),
          "--no-config",
          program,
          "run",
          "--config",
          configPath,
          "--kubeconfig",
          kubeconfig,
          "--host",
          "cp-1",
          "--listen",
          `127.0.0.1:${port}`,
          "-v",
          "2",
        ],
        clearEnv: true,
        env: {
          PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
          KEELSON_TEST_LOG: logPath,
          JOURNAL_STREAM: journalStream,
        },
        stdin: "null",
        stdout: "null",
        stderr: "null",
      }).spawn();
      try {
        await waitFor(
          async () => (await Deno.readTextFile(logPath)).includes("Cannot use kubeconfig"),
          { timeoutMs: 30_000, message: "the kubeconfig error in the log" },
        );
        child.kill("SIGTERM");
        const status = await child.status;
        assert.equal(status.code, 0);
      } finally {
        try {
          child.kill("SIGKILL");
        } catch {
          // exited
        }
        await child.status;
      }
      return (await Deno.readTextFile(logPath)).trimEnd().split("\n");
    };
    const identity = async (path: string) => {
      const info = await Deno.stat(path);
      return `${info.dev}:${info.ino}`;
    };

    const journal = `${dir}/journal.log`;
    await Deno.writeTextFile(journal, "");
    const lines = await run(journal, await identity(journal));
    const priorities = new Map<string, Set<string>>();
    for (const line of lines) {
      const match = /^<(\d)>(\{.*\})$/.exec(line);
      assert.ok(match, `a line without its priority: ${line.slice(0, 200)}`);
      const level: string = JSON.parse(match[2]!).level;
      priorities.set(level, (priorities.get(level) ?? new Set()).add(match[1]!));
    }
    assert.deepEqual(priorities.get("ERROR"), new Set(["3"]));
    assert.deepEqual(priorities.get("INFO"), new Set(["6"]));
    assert.deepEqual(priorities.get("DEBUG"), new Set(["7"]), "the stop steps log at debug");
    for (const [level, prefixes] of priorities) {
      const expected = { WARN: "4", FATAL: "2", TRACE: "7" }[level];
      if (expected) assert.deepEqual(prefixes, new Set([expected]), level);
    }

    // JOURNAL_STREAM inherited but stderr is another file: plain lines
    const other = `${dir}/other.log`;
    await Deno.writeTextFile(other, "");
    const plain = await run(other, await identity(journal));
    assert.ok(plain.length > 3);
    for (const line of plain) assert.ok(line.startsWith("{"), line.slice(0, 200));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
