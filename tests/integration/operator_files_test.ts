/**
 * `keelson run` as it ships (the bundle with the baked permission and V8 flags) keeps working when
 * a file the operator named turns hostile under it: the metrics token file becomes a FIFO, then a
 * link to /dev/zero; a reload names a FIFO as a BGP password. No Kubernetes API is needed (the agent
 * retries its connection meanwhile, as on a new cluster).
 *
 * Before: the first /metrics request after the token file became a FIFO froze the whole process
 * (a synchronous read in the request handler): /healthz stopped answering and SIGTERM was ignored;
 * the FIFO password reload never finished, and every later reload queued behind it.
 *
 * The agent runs as root with the baked flags (the harness has no user switch yet); `check` runs
 * as an unprivileged user (uid ${uid}), to see the message naming the user that cannot read a file.
 */
import assert from "node:assert/strict";
import { keelsonCommand, testUser } from "./_harness/shipped_keelson.ts";
import { startKeelson } from "./_harness/keelson_process.ts";
import { figure } from "./_harness/lb_services.ts";
import { pollUntil } from "../_support/poll.ts";

const TOKEN = "s3cret-t0ken";
/** The token file is re-read at most every 10 s. */
const REREAD_WAIT_MS = 11_000;
/** The unit's TimeoutStopSec is 20 s; the agent stops in far less. */
const STOP_BOUND_MS = 10_000;

function inventory(dir: string, passwordFile?: string, name = "it"): string {
  return `[cluster]
name = "${name}"

[server]
metrics_token_file = "${dir}/token"

[keepalived]
enabled = false

[bgp]
asn = 64513

[[bgp.peers]]
name = "tor"
address = "10.0.0.1"
asn = 64512
${passwordFile ? `password_file = "${passwordFile}"\n` : ""}
[[machines]]
name = "w-1"
internal_ips = ["10.0.0.21"]
`;
}

async function get(
  url: string,
  token?: string,
): Promise<{ status: number; body: string } | undefined> {
  try {
    const response = await fetch(url, {
      signal: AbortSignal.timeout(5_000),
      ...(token ? { headers: { Authorization: `Bearer ${token}` } } : {}),
    });
    return { status: response.status, body: await response.text() };
  } catch {
    return undefined;
  }
}

/** How the agent's endpoints are polled: every 100 ms, for up to 20 s by default. */
const POLLED = { timeoutMs: 20_000, intervalMs: 100 };

async function mkfifo(path: string): Promise<void> {
  assert.ok((await new Deno.Command("mkfifo", { args: [path] }).output()).success, "mkfifo");
}

function rssKib(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Number(status.match(/^VmRSS:\s+(\d+) kB/m)?.[1]);
}

Deno.test("the shipped agent survives a metrics token file and a BGP password that turn into a FIFO or /dev/zero", async () => {
  const dir = await Deno.makeTempDir({ prefix: "keelson-operator-files-" });
  const configPath = `${dir}/keelson.toml`;
  await Deno.writeTextFile(`${dir}/token`, `${TOKEN}\n`);
  await Deno.writeTextFile(configPath, inventory(dir));
  const keelson = await startKeelson({ configPath, dir, host: "w-1" });
  try {
    await pollUntil(
      "/healthz",
      async () => (await get(`${keelson.url}/healthz`))?.status === 200 || undefined,
      POLLED,
    );
    const reloadGauge = async () => {
      const metrics = await get(`${keelson.url}/metrics`, TOKEN);
      const line = metrics?.body.match(/^keelson_config_last_reload_successful (\d)$/m);
      return line ? Number(line[1]) : undefined;
    };
    assert.equal(await reloadGauge(), 1);

    // a reload naming a FIFO as a password is rejected at once; the next reload still works
    const fifoPassword = `${dir}/password.fifo`;
    await mkfifo(fifoPassword);
    await keelson.reload(configPath, inventory(dir, fifoPassword));
    await pollUntil(
      "the FIFO reload rejected",
      async () => (await reloadGauge()) === 0 || undefined,
      { ...POLLED, timeoutMs: 10_000 },
    );
    const rejected = await keelson.log();
    assert.match(rejected, /cannot read \\?"[^"]*password\.fifo\\?": is not a regular file/);
    await keelson.reload(configPath, inventory(dir, undefined, "it-2"));
    await pollUntil(
      "the next reload accepted",
      async () => (await reloadGauge()) === 1 || undefined,
      { ...POLLED, timeoutMs: 10_000 },
    );
    assert.match(await keelson.log(), /Configuration reloaded/);

    // the token file becomes a FIFO: /metrics refuses, health answers, nothing freezes
    await Deno.remove(`${dir}/token`);
    await mkfifo(`${dir}/token`);
    await pollUntil(
      "a FIFO token file closing /metrics",
      async () => (await get(`${keelson.url}/metrics`, TOKEN))?.status === 401,
      { ...POLLED, timeoutMs: REREAD_WAIT_MS + 10_000, intervalMs: 500 },
    );
    assert.equal((await get(`${keelson.url}/healthz`))?.status, 200, "health still answers");
    assert.match(
      await keelson.log(),
      /Cannot use \[server\] metrics_token_file .*is not a regular file/,
    );

    // then a link to /dev/zero: refused before it is read, memory stays put
    const pid = keelson.process.pid!;
    const before = rssKib(pid);
    await Deno.remove(`${dir}/token`);
    await Deno.symlink("/dev/zero", `${dir}/token`);
    await new Promise((r) => setTimeout(r, REREAD_WAIT_MS));
    assert.equal((await get(`${keelson.url}/metrics`, TOKEN))?.status, 401);
    assert.equal((await get(`${keelson.url}/healthz`))?.status, 200);
    const grown = rssKib(pid) - before;
    figure(`RSS growth after a /dev/zero token file: ${grown} KiB`);
    assert.ok(grown < 64 * 1024, `RSS grew by ${grown} KiB`);

    // SIGTERM still ends it
    const started = Date.now();
    const killed = await keelson.process.stop(STOP_BOUND_MS);
    assert.equal(killed, false, `SIGTERM ignored; log:\n${await keelson.process.logTail()}`);
    figure(`stopped ${Date.now() - started} ms after SIGTERM`);
  } finally {
    await keelson.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name:
    "the shipped check, run as an unprivileged user, names that user and the fix for a file it cannot read",
  ignore: Deno.uid() !== 0,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "keelson-operator-files-" });
    try {
      await Deno.chmod(dir, 0o755);
      await Deno.writeTextFile(`${dir}/token`, `${TOKEN}\n`, { mode: 0o600 });
      const inventoryPath = `${dir}/keelson.toml`;
      await Deno.writeTextFile(inventoryPath, inventory(dir), { mode: 0o644 });
      await Deno.writeTextFile(`${dir}/private.toml`, inventory(dir), { mode: 0o600 });
      const check = async (path: string) => {
        const [command, ...args] = await keelsonCommand(["check", "--config", path], {
          unprivileged: true,
        });
        const output = await new Deno.Command(command!, { args, clearEnv: true }).output();
        const decode = (b: Uint8Array) => new TextDecoder().decode(b);
        return { code: output.code, out: decode(output.stdout) + decode(output.stderr) };
      };
      const { name: user, uid, gid } = await testUser();
      const group = (await Deno.readTextFile("/etc/group"))
        .match(new RegExp(`^([^:]+):[^:]*:${gid}:`, "m"))?.[1];
      assert.ok(group, `this test needs gid ${gid} in /etc/group`);
      const token = await check(inventoryPath);
      assert.equal(token.code, 1, token.out);
      assert.ok(
        token.out.includes(
          `${inventoryPath}:5: server.metrics_token_file: cannot read "${dir}/token": is not readable ` +
            `by user ${user} (uid ${uid}): chown root:${group} ${dir}/token && chmod 0640 ${dir}/token`,
        ),
        token.out,
      );
      const config = await check(`${dir}/private.toml`);
      assert.equal(config.code, 1, config.out);
      assert.ok(
        config.out.includes(
          `Cannot read the configuration file: is not readable by user ${user} (uid ${uid}): ` +
            `chown root:${group} ${dir}/private.toml && chmod 0640 ${dir}/private.toml`,
        ),
        config.out,
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
