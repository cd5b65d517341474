/**
 * The privilege boundary, end to end: whoever controls the `keelson` account (a remote-code bug in
 * the agent, a stolen shell) is worth no more than the account's job. A real keepalived and a real
 * BIRD run as root in a network namespace, reading the files the root step installs; the root step
 * runs as keelson-apply.service runs it (`keelson apply-host-config --watch`, the shipped bundle
 * with the baked flags, root with no capability, group of the agent's user). The attacker is the
 * agent's identity (`keelson-test`, no capability, as keelson.service runs it; same writable
 * paths). It:
 * - writes into the daemons' directories directly (refused by the file system);
 * - stages a keepalived file with a root `notify_master`, a `vrrp_script` with `track_script`
 *   and `script_user root`;
 * - stages a BIRD file with an `include` of a root-only file and a kernel protocol exporting a
 *   default route;
 * - signals keepalived and a root process of the test's own;
 * - sends `configure` (of its own file and of a root-only one), `disable` and `down` to every BIRD
 *   socket it can reach: BIRD's own (root's here, as bird:bird 0660 is on a host where keelson is
 *   not in group bird) refuses the connection, the root step's read-only socket answers
 *   `show protocols all` and refuses the rest;
 * - tries to replace, move or remove keepalived's notify FIFO, which keepalived made in root's
 *   `<track_file_dir>-daemons` (not in the directory the account owns, where a link put in its
 *   place would have root's keepalived open or chown what the account chose).
 * Then: no command ran as root (no marker file), the installed files and what the daemons serve
 * are the last good ones (the VIP on eth0, BIRD's routes and protocols, no default route in the
 * kernel), both signals were refused, BIRD was not reconfigured nor a protocol disabled, the FIFO is
 * keepalived's, and a good staging afterwards is still installed.
 *
 * Needs root, keepalived, bird2, iproute2 and setpriv; skipped loudly otherwise (failed with
 * KEELSON_REQUIRE_E2E=1).
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  keelsonCommand,
  shippedDirs,
  TEST_USER,
  testUser,
} from "../integration/_harness/shipped_keelson.ts";
import { e2eUnavailable, OneHostNamespace, report, run, skipLoudly } from "./_keepalived_lab.ts";
import { holdsFor, pollUntil } from "../_support/poll.ts";
import { parseConfig } from "../../src/config/parse_config.ts";
import { renderHostKeepalived } from "../../providers/baremetal/keepalived/announcer.ts";
import { renderHostBird } from "../../providers/baremetal/bird/host_config.ts";
import { outcomeFile, parseStageOutcome } from "../../src/config/stage_outcome.ts";
import { daemonPaths } from "../../src/config/daemon_dir.ts";
import { birdCommand } from "../../providers/baremetal/bird/control_socket.ts";

const NS = `kpriv${Deno.pid % 100000}`;
const SUBNET = "10.250.93";
const BOUND_MS = 60_000;
const reason = skipLoudly(
  "compromised-account e2e test",
  e2eUnavailable(["keepalived", "bird", "birdcl", "ip", "setpriv"]),
);

const SERVICE_VIP = `${SUBNET}.130`;
const SECOND_VIP = `${SUBNET}.131`;
const BGP_VIP = "198.51.100.3";

function inventory(paths: {
  work: string;
  keepalived: string;
  track: string;
  bird: string;
  socket: string;
}): string {
  return [
    '[cluster]\nname = "priv"\ncluster_cidr = ["10.244.0.0/16"]\n',
    `[kubernetes]\nkubeconfig = "${paths.work}/no-kubeconfig"\n`,
    "[keepalived]",
    `config_file = "${paths.keepalived}/keelson.conf"`,
    `pid_file = "${paths.work}/keepalived.pid"`,
    `track_file_dir = "${paths.track}"`,
    'interface = "eth0"\n',
    "[bgp]",
    "asn = 64513",
    `config_file = "${paths.bird}/keelson.conf"`,
    `socket = "${paths.socket}/bird.ctl"\n`,
    `[[bgp.peers]]\nname = "tor"\naddress = "${SUBNET}.1"\nasn = 64512\n`,
    `[[pools]]\nname = "vrrp"\naddresses = ["${SUBNET}.128/27"]\n`,
    '[[pools]]\nname = "bgp"\naddresses = ["198.51.100.0/28"]\nannounce = "bgp"\n',
    `[[machines]]\nname = "cp-1"\nrole = "control-plane"\ninternal_ips = ["${SUBNET}.11"]\n`,
  ].join("\n");
}

/** The attacker: the agent's user with the agent's (empty) capability set. */
async function asAccount(argv: string[], stdin?: string): Promise<Deno.CommandOutput> {
  const { name } = await testUser();
  const child = new Deno.Command("setpriv", {
    args: [
      `--reuid=${name}`,
      `--regid=${name}`,
      "--init-groups",
      "--no-new-privs",
      "--bounding-set=-all",
      "--inh-caps=-all",
      "--ambient-caps=-all",
      "--",
      ...argv,
    ],
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(stdin));
    await writer.close();
  }
  return await child.output();
}

/** Stages `text` as the agent does: a temp file in the staging directory, renamed. */
async function stage(dir: string, name: string, text: string): Promise<void> {
  const out = await asAccount([
    "sh",
    "-c",
    `mkdir -p "$1" && cat > "$1/.$2.tmp" && mv -f "$1/.$2.tmp" "$1/$2"`,
    "stage",
    dir,
    name,
  ], text);
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
}

const read = (path: string) => Deno.readTextFile(path).catch(() => "");

Deno.test({
  name:
    "a compromised keelson account runs nothing as root, loads nothing outside Keelson's template into keepalived or BIRD, and signals nothing",
  ignore: reason !== undefined,
  sanitizeResources: false,
  sanitizeOps: false,
}, async (t) => {
  await using dirs = await shippedDirs();
  const host = await OneHostNamespace.create(NS, SUBNET, "keelson-priv-");
  const work = host.work;
  try {
    const { uid, gid } = await testUser();

    const paths = {
      work,
      keepalived: dirs.keepalived,
      track: dirs.track,
      bird: dirs.bird,
      socket: dirs.birdSocket,
    };
    const invPath = `${work}/keelson.toml`;
    const invText = inventory(paths);
    await Deno.writeTextFile(invPath, invText, { mode: 0o644 });
    const config = parseConfig(invText, invPath);
    const stageDir = `${dirs.track}/stage`;
    const kaFile = config.keepalived.config_file;
    const birdFile = config.bgp!.config_file;
    const goodKeepalived = (vips: string[]) => {
      const r = renderHostKeepalived({
        config,
        host: "cp-1",
        serviceVips: vips,
        notifyFifoUser: TEST_USER,
      });
      if ("error" in r) throw new Error(r.error);
      return r.text;
    };
    const good = goodKeepalived([SERVICE_VIP]);
    const birdRendered = renderHostBird({
      config,
      host: "cp-1",
      serviceVips: [BGP_VIP],
      nodes: [],
      controlPlaneHealthy: false,
    });
    if ("error" in birdRendered) throw new Error(birdRendered.error);
    const goodBird = birdRendered.text;
    const daemons = daemonPaths(config);
    assert.equal(daemons.dir, dirs.daemons);
    // BIRD's socket directory as on a host: not the account's (/run/bird is bird:bird 0775 there,
    // and keelson is not in group bird); BIRD runs as root here, so its socket is root:root 0660
    await Deno.chown(dirs.birdSocket, 0, 0);
    await Deno.chmod(dirs.birdSocket, 0o755);

    const rootLog = `${work}/root-step.log`;
    const keepalivedLog = `${work}/keepalived.log`;
    const birdLog = `${work}/bird.log`;
    const context = async () =>
      `--- root step\n${(await read(rootLog)).slice(-3000)}\n--- keepalived\n${
        (await read(keepalivedLog)).slice(-1500)
      }\n--- bird\n${(await read(birdLog)).slice(-1500)}`;
    const polled = { timeoutMs: BOUND_MS, intervalMs: 20, context };

    // the root step as keelson-apply.service runs it: root, no capability, the agent's group
    const rootStep = await keelsonCommand([
      "apply-host-config",
      "--watch",
      "--config",
      invPath,
      "--host",
      "cp-1",
      "--agent-user",
      TEST_USER,
    ]);
    host.spawn(
      `exec ip netns exec ${NS} setpriv --bounding-set=-all --inh-caps=-all --ambient-caps=-all ` +
        `--groups=${gid} -- "$@" >> ${rootLog} 2>&1`,
      "root-step",
      ...rootStep,
    );

    await t.step(
      "a good staging is installed by the root step, and the daemons serve it",
      async () => {
        const t0 = performance.now();
        await stage(stageDir, "keepalived.conf", good);
        await stage(stageDir, "bird.conf", goodBird);
        await pollUntil(
          "the root step to install both files",
          async () => (await read(kaFile)) === good && (await read(birdFile)) === goodBird,
          polled,
        );
        report(`RESULT root_step_first_install_ms=${Math.round(performance.now() - t0)}`);
        const stat = await Deno.stat(kaFile);
        assert.equal(stat.uid, 0, "the installed keepalived file is root's");
        assert.equal((await Deno.stat(dirs.keepalived)).uid, 0, "so is its directory");

        await Deno.writeTextFile(
          `${work}/keepalived.conf`,
          `global_defs {\n    enable_script_security\n    script_user root\n}\n` +
            `include ${dirs.keepalived}/*.conf\n`,
        );
        host.startKeepalived(keepalivedLog);
        host.spawn(
          `exec ip netns exec ${NS} bird -f -c ${birdFile} ` +
            `-s ${dirs.birdSocket}/bird.ctl >> ${birdLog} 2>&1`,
        );
        await pollUntil(
          `${SERVICE_VIP} on eth0`,
          async () => (await addresses()).includes(SERVICE_VIP),
          polled,
        );
        await pollUntil(
          `BIRD to originate ${BGP_VIP}/32`,
          async () => (await bird("show", "route")).includes(`${BGP_VIP}/32`),
          polled,
        );
      },
    );

    const marker = `${work}/ran-as-root`;
    const rootOnly = `${work}/root-only.conf`;
    const keepalivedPid = async () => Number((await read(`${work}/keepalived.pid`)).trim());
    // a root process of the test's own
    const bystander = host.track(new Deno.Command("sleep", { args: ["600"] }).spawn());

    await t.step("the account cannot write the daemons' files itself", async () => {
      for (const file of [kaFile, birdFile, `${dirs.keepalived}/evil.conf`]) {
        const out = await asAccount(["sh", "-c", `echo 'include /tmp/x' > "$1"`, "w", file]);
        assert.notEqual(out.code, 0, `${file} was writable by the account`);
        assert.match(new TextDecoder().decode(out.stderr), /Permission denied/);
      }
      assert.equal(await read(kaFile), good);
      assert.equal(await read(birdFile), goodBird);
    });

    await t.step(
      "a staged keepalived file with root scripts is refused; nothing runs as root",
      async () => {
        const hostile = good
          .replace(
            "    state BACKUP\n",
            `    state BACKUP\n    notify_master "/usr/bin/touch ${marker}" root\n`,
          )
          .replace("    version 3\n", "    version 3\n    track_script {\n        chk\n    }\n") +
          `vrrp_script chk {\n    script "/usr/bin/touch ${marker}.track"\n    user root\n}\n` +
          "global_defs {\n    script_user root\n}\n";
        assert.match(hostile, /notify_master/);
        assert.match(hostile, /track_script/);
        assert.notEqual(hostile, good);
        await stage(stageDir, "keepalived.conf", hostile);
        const outcome = await pollUntil("the root step's outcome", async () => {
          const o = parseStageOutcome(await read(outcomeFile(kaFile)));
          return o?.result === "refused" ? o : undefined;
        }, polled);
        report(`RESULT keepalived_refused: ${outcome.value.message}`);
        assert.equal(await read(kaFile), good, "the installed file is the last good one");
      },
    );

    await t.step(
      "a staged BIRD file with an include and a kernel default route is refused",
      async () => {
        await Deno.writeTextFile(
          rootOnly,
          "protocol kernel kx {\n  ipv4 { export all; };\n}\n",
          { mode: 0o600 },
        );
        const hostile = goodBird + `include "${rootOnly}";\n` +
          "protocol static evil {\n  ipv4;\n  route 0.0.0.0/0 via " + `${SUBNET}.99;\n}\n` +
          "protocol kernel {\n  ipv4 { export all; };\n}\n";
        await stage(stageDir, "bird.conf", hostile);
        const outcome = await pollUntil("the root step's outcome", async () => {
          const o = parseStageOutcome(await read(outcomeFile(birdFile)));
          return o?.result === "refused" ? o : undefined;
        }, polled);
        report(`RESULT bird_refused: ${outcome.value.message}`);
        assert.equal(await read(birdFile), goodBird, "the installed file is the last good one");
      },
    );

    await t.step(
      "signals to keepalived and to a root process of the test's are refused",
      async () => {
        const pid = await keepalivedPid();
        assert.ok(pid > 1);
        for (const [signal, target] of [["HUP", pid], ["TERM", bystander.pid]] as const) {
          const out = await asAccount(["kill", `-${signal}`, String(target)]);
          assert.notEqual(out.code, 0, `kill -${signal} ${target} succeeded`);
          assert.match(new TextDecoder().decode(out.stderr), /Operation not permitted/);
        }
        assert.equal(await keepalivedPid(), pid, "keepalived still runs");
        const bystanderEnded = await Promise.race([
          bystander.status.then(() => true),
          new Promise<boolean>((r) => setTimeout(() => r(false), 300)),
        ]);
        assert.equal(bystanderEnded, false, "the root process was not signalled");
      },
    );

    await t.step(
      "the account reaches BIRD only through the read-only socket: configure, disable and down are refused",
      async () => {
        const birdSocket = `${dirs.birdSocket}/bird.ctl`;
        const asBirdc = async (socket: string, ...args: string[]) => {
          const out = await asAccount(["birdcl", "-s", socket, ...args]);
          return {
            code: out.code,
            text: new TextDecoder().decode(out.stdout) +
              new TextDecoder().decode(out.stderr),
          };
        };
        // the sessions, as the agent reads them: through the root step's socket
        const shown = await pollUntil("the read-only socket to answer the account", async () => {
          const out = await asBirdc(daemons.birdReadSocket, "show", "protocols", "all");
          return out.code === 0 && /keelson_peer_tor/.test(out.text) ? out : undefined;
        }, polled);
        assert.match(shown.value.text, /Routes:\s+\d+ imported, \d+ exported/);
        const status = async () =>
          (await bird("show", "status")).split("\n").filter((l) => /reconfiguration/i.test(l));
        const before = await status();
        assert.equal(before.length, 1, "show status names the last reconfiguration");
        const hostile = [
          ["configure"],
          ["configure", `"${rootOnly}"`],
          ["configure", "soft", `"${birdFile}"`],
          ["disable", "keelson_peer_tor"],
          ["restart", "keelson_peer_tor"],
          ["down"],
        ];
        for (const command of hostile) {
          const direct = await asBirdc(birdSocket, ...command);
          assert.match(direct.text, /Permission denied/, `${command.join(" ")} on BIRD's socket`);
          const relayed = await asBirdc(daemons.birdReadSocket, ...command);
          assert.match(
            relayed.text,
            /Access denied/,
            `${command.join(" ")} on the read-only socket`,
          );
        }
        // BIRD runs, was not reconfigured, and its session protocol is not disabled
        assert.deepEqual(await status(), before, "BIRD was not reconfigured");
        const protocol = await bird("show", "protocols", "keelson_peer_tor");
        assert.match(protocol, /keelson_peer_tor\s+BGP/);
        assert.doesNotMatch(protocol, /\bdown\b/, "the session protocol is not disabled");
        assert.doesNotMatch(await bird("show", "protocols"), /\bkx\b/);
        assert.equal(await read(birdFile), goodBird);

        // what the relay costs the agent's poll: the same command, direct and relayed (as root)
        const timed = async (socket: string) => {
          const ms: number[] = [];
          for (let i = 0; i < 30; i++) {
            const t0 = performance.now();
            await birdCommand(socket, "show protocols all", 5000);
            ms.push(performance.now() - t0);
          }
          ms.sort((a, b) => a - b);
          return `median ${ms[15]!.toFixed(2)} ms, max ${ms[29]!.toFixed(2)} ms`;
        };
        report(`RESULT show_protocols_all direct: ${await timed(birdSocket)}`);
        report(
          `RESULT show_protocols_all read-only socket: ${await timed(daemons.birdReadSocket)}`,
        );
      },
    );

    await t.step(
      "the account cannot replace, move or remove keepalived's notify FIFO",
      async () => {
        const fifo = daemons.notifyFifo;
        const made = await pollUntil("keepalived to make its notify FIFO", async () => {
          const info = await Deno.lstat(fifo).catch(() => undefined);
          return info?.isFifo ? info : undefined;
        }, polled);
        assert.equal(made.value.uid, uid, "keepalived gives the FIFO to the account");
        const dir = await Deno.stat(daemons.dir);
        assert.equal(dir.uid, 0, "the FIFO's directory is root's");
        for (
          const attempt of [
            `ln -sf /etc/shadow "${fifo}"`,
            `rm -f "${fifo}"`,
            `mv -f "${fifo}" "${fifo}.moved"`,
            `mkfifo "${daemons.dir}/other"`,
            `ln -s /etc/shadow "${daemons.dir}/other"`,
            `touch "${daemons.dir}/other"`,
          ]
        ) {
          const out = await asAccount(["sh", "-c", attempt]);
          assert.notEqual(out.code, 0, `${attempt} succeeded`);
          assert.match(new TextDecoder().decode(out.stderr), /Permission denied/, attempt);
        }
        const after = await Deno.lstat(fifo);
        assert.ok(after.isFifo);
        assert.equal(after.ino, made.value.ino, "the same FIFO keepalived made");
        assert.deepEqual(
          [...Deno.readDirSync(daemons.dir)].map((e) => e.name).sort(),
          ["bird-ro.ctl", "keepalived-notify.fifo"],
        );
      },
    );

    await t.step(
      "the daemons keep serving the last good configuration, and nothing ran as root",
      async () => {
        // keepalived reloaded by the root step after a later good file: only Keelson's template
        const second = goodKeepalived([SERVICE_VIP, SECOND_VIP]);
        const t0 = performance.now();
        await stage(stageDir, "keepalived.conf", second);
        await pollUntil(
          `${SECOND_VIP} on eth0 after a good staging`,
          async () => (await addresses()).includes(SECOND_VIP),
          polled,
        );
        report(`RESULT good_staging_to_vip_ms=${Math.round(performance.now() - t0)}`);
        assert.ok((await addresses()).includes(SERVICE_VIP));
        // a notify_master or track_script would run on the master transition: watched for 2 s
        const absent = (file: string) => Deno.stat(file).then(() => false, () => true);
        await holdsFor(
          "no notify or track script ran",
          async () => await absent(marker) && await absent(`${marker}.track`),
          { forMs: 2000, intervalMs: 50 },
        );
        for (const file of [marker, `${marker}.track`]) {
          assert.equal(
            await Deno.stat(file).then(() => true, () => false),
            false,
            `${file} exists`,
          );
        }
        assert.doesNotMatch(await read(keepalivedLog), /chk|notify_master|touch/);
        const protocols = await bird("show", "protocols");
        assert.doesNotMatch(protocols, /\bkx\b|\bevil\b|Kernel/i);
        const routes = await bird("show", "route");
        assert.match(routes, new RegExp(`${BGP_VIP.replaceAll(".", "\\.")}/32`));
        assert.doesNotMatch(routes, /0\.0\.0\.0\/0/);
        const kernel = await run("ip", ["-n", NS, "route", "show", "default"]);
        assert.equal(kernel.trim(), "", "no default route reached the kernel");
        assert.doesNotMatch(await read(rootLog), /NotCapable|Unhandled/);
        // the account's own directory is all it owns
        assert.equal((await Deno.stat(dirs.track)).uid, uid);
      },
    );
  } finally {
    await host.close();
  }

  async function addresses(): Promise<string> {
    return await run("ip", ["-n", NS, "-j", "addr", "show", "dev", "eth0"]);
  }

  async function bird(...args: string[]): Promise<string> {
    return await run("birdcl", ["-s", `${dirs.birdSocket}/bird.ctl`, ...args]);
  }
});
