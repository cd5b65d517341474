/**
 * Keelson as it ships, against a real keepalived: the bundle (`deno bundle`, what
 * scripts/compile.sh compiles; `deno compile` cannot fetch its runtime here) run with exactly the
 * baked permission and V8 flags, as the unprivileged user `keelson-test` with no capability
 * (setpriv, as the systemd unit's `User=keelson` and empty `CapabilityBoundingSet=`) beside the
 * root step that installs what it stages (as keelson-apply.service), with its
 * files where the baked `--allow-write` lets it write (a scratch directory under
 * /etc/keepalived/conf.d and under /run/keelson, owned by that user). In one network namespace
 * with a veth eth0 and a keepalived started by hand:
 * - `keelson check` refuses a config_file outside the baked write set, naming it;
 * - `keelson run` writes keepalived's file with the notify FIFO block for its own user, and the
 *   apiserver track file;
 * - once keepalived runs, the FIFO reports VRRP states;
 * - an inventory change and a SIGHUP to keelson make keelson SIGHUP keepalived, and keepalived
 *   reloads the new file;
 * - no "Unhandled rejection" and no `NotCapable` in keelson's log.
 *
 * On main 6b61af5 (before the fixes) keepalived was never signalled ("which is not a running
 * keepalived": /proc/<pid>/comm refused) and the file had no FIFO block.
 *
 * Keelson's command, user, and scratch directories come from the tests' one harness
 * (`tests/integration/_harness/shipped_keelson.ts`), which creates the user when it is missing.
 *
 * Needs root, keepalived, iproute2 and setpriv; skipped loudly otherwise (failed with
 * KEELSON_REQUIRE_E2E=1). Run under the heavy lock (tests/README or COMMON rules).
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  keelsonCommand,
  shellCommand,
  shippedDirs,
  TEST_USER as USER,
} from "../integration/_harness/shipped_keelson.ts";
import { e2eUnavailable, OneHostNamespace, report, skipLoudly } from "./_keepalived_lab.ts";
import { pollUntil } from "../_support/poll.ts";

const NS = `kship${Deno.pid}`;
const SUBNET = "10.250.77";
const BOUND_MS = 90_000;

const reason = skipLoudly(
  "shipped keepalived e2e test",
  e2eUnavailable(["keepalived", "ip", "setpriv"]),
);

function inventory(configFile: string, work: string, trackDir: string, garp: number): string {
  return [
    '[cluster]\nname = "shipped"\n',
    `[kubernetes]\nkubeconfig = "${work}/no-kubeconfig"\n`,
    '[server]\nlisten = "127.0.0.1:0"\n',
    "[keepalived]",
    `config_file = "${configFile}"`,
    `pid_file = "${work}/keepalived.pid"`,
    `track_file_dir = "${trackDir}"`,
    'interface = "eth0"',
    `garp_master_refresh = ${garp}\n`,
    `[control_plane]\nvip = ["${SUBNET}.100"]\n`,
    `[[machines]]\nname = "cp-1"\nrole = "control-plane"\ninternal_ips = ["${SUBNET}.11"]\n`,
    `[[machines]]\nname = "cp-2"\nrole = "control-plane"\ninternal_ips = ["${SUBNET}.12"]\n`,
  ].join("\n");
}

const read = (path: string) => Deno.readTextFile(path).catch(() => "");

Deno.test({
  name:
    "the shipped bundle, as an unprivileged user with no capability beside the root step, renders the notify FIFO and reloads a real keepalived",
  ignore: reason !== undefined,
  sanitizeResources: false,
  sanitizeOps: false,
}, async (t) => {
  // under the baked --allow-write directories, owned by the test user
  await using dirs = await shippedDirs();
  const CONF_DIR = dirs.keepalived;
  const TRACK_DIR = dirs.track;
  const host = await OneHostNamespace.create(NS, SUBNET, "keelson-shipped-");
  const work = host.work;
  try {
    const keelson = await keelsonCommand([], { unprivileged: true });
    const configFile = `${CONF_DIR}/keelson.conf`;
    const invPath = `${work}/keelson.toml`;
    const keelsonLog = `${work}/keelson.log`;
    const keepalivedLog = `${work}/keepalived.log`;
    const context = async () =>
      `--- keelson.log\n${(await read(keelsonLog)).slice(-4000)}\n--- keepalived.log\n${
        (await read(keepalivedLog)).slice(-2000)
      }`;

    await t.step("check refuses a config_file outside the baked write set", async () => {
      const outside = `${work}/outside.toml`;
      const text = inventory(`${work}/keelson.conf`, work, TRACK_DIR, 60);
      await Deno.writeTextFile(outside, text, { mode: 0o644 });
      const line = text.split("\n").findIndex((l) => l.startsWith("config_file =")) + 1;
      const out = await new Deno.Command(keelson[0]!, {
        args: [...keelson.slice(1), "check", "--config", outside],
        stdout: "piped",
        stderr: "piped",
      }).output();
      const stdout = new TextDecoder().decode(out.stdout);
      assert.equal(out.code, 1, stdout + new TextDecoder().decode(out.stderr));
      assert.ok(
        stdout.includes(
          `${outside}:${line}: keepalived.config_file: "${work}/keelson.conf" is outside the ` +
            "directories the keelson binary may write: only under /etc/keepalived/conf.d, " +
            "/run/keelson, /run/keelson-daemons, /etc/keelson/bird, /run/bird",
        ),
        stdout,
      );
    });

    await Deno.writeTextFile(invPath, inventory(configFile, work, TRACK_DIR, 60), { mode: 0o644 });
    const started = host.spawn(
      `exec ip netns exec ${NS} ${shellCommand(keelson)} run --config ${invPath} --host cp-1 ` +
        `--log-format json >> ${keelsonLog} 2>&1`,
    );

    await t.step("run writes keepalived's file with the FIFO block for its own user", async () => {
      const { ms } = await pollUntil(
        "keepalived's file",
        async () => (await read(configFile)).includes("vrrp_instance") ? true : undefined,
        { timeoutMs: BOUND_MS, intervalMs: 50, context: context },
      );
      report(`keelson wrote ${configFile} ${Math.round(ms)} ms after start`);
      const text = await read(configFile);
      assert.ok(
        text.includes(`vrrp_notify_fifo "${dirs.daemons}/keepalived-notify.fifo" ${USER}`),
        `no FIFO block for ${USER}:\n${text}\n${await context()}`,
      );
      assert.match(text, /garp_master_refresh 60/);
      await pollUntil(
        "the apiserver track file",
        async () => (await read(`${TRACK_DIR}/apiserver-health`)) !== "" ? true : undefined,
        { timeoutMs: BOUND_MS, intervalMs: 50, context: context },
      );
    });

    await Deno.writeTextFile(`${work}/keepalived.conf`, `include ${CONF_DIR}/*.conf\n`);
    const keepalived = host.startKeepalived(keepalivedLog);

    await t.step("the notify FIFO reports VRRP states to keelson", async () => {
      const { ms } = await pollUntil(
        "a VRRP state from the FIFO",
        async () => /VRRP instance .* is /.test(await read(keelsonLog)) ? true : undefined,
        { timeoutMs: BOUND_MS, intervalMs: 50, context: context },
      );
      report(`first VRRP state from the FIFO ${Math.round(ms)} ms after keepalived started`);
    });

    await t.step(
      "an inventory change and SIGHUP to keelson make keelson SIGHUP keepalived",
      async () => {
        const pid = Number((await read(`${work}/keepalived.pid`)).trim());
        assert.ok(pid > 1, "keepalived wrote its pid file");
        assert.equal(pid, keepalived.pid, "the pid file names the keepalived started here");
        const reloadsBefore = (await read(keepalivedLog)).match(/Reloading/g)?.length ?? 0;
        // keelson may have signalled keepalived already (it reloads a file written before
        // keepalived ran once keepalived is up): wait for one more
        const sighups = async () =>
          (await read(keelsonLog)).split(`SIGHUP sent to ${pid}`).length - 1;
        const sighupsBefore = await sighups();
        await Deno.writeTextFile(invPath, inventory(configFile, work, TRACK_DIR, 30), {
          mode: 0o644,
        });
        Deno.kill(started.pid, "SIGHUP");
        const { ms } = await pollUntil(
          `"SIGHUP sent to ${pid}" in keelson's log`,
          async () => (await sighups()) > sighupsBefore ? true : undefined,
          { timeoutMs: BOUND_MS, intervalMs: 50, context: context },
        );
        report(`keelson sent SIGHUP to keepalived ${Math.round(ms)} ms after its own SIGHUP`);
        assert.match(await read(configFile), /garp_master_refresh 30/);
        await pollUntil(
          "keepalived to reload",
          async () =>
            ((await read(keepalivedLog)).match(/Reloading/g)?.length ?? 0) > reloadsBefore
              ? true
              : undefined,
          { timeoutMs: BOUND_MS, intervalMs: 50, context: context },
        );
      },
    );

    await t.step(
      "keelson stops cleanly, with no unhandled rejection or refused permission",
      async () => {
        Deno.kill(started.pid, "SIGTERM");
        const status = await started.status;
        const log = await read(keelsonLog);
        assert.equal(status.code, 0, await context());
        assert.doesNotMatch(log, /Unhandled rejection|NotCapable|--allow-/);
      },
    );
  } finally {
    await host.close();
  }
});
