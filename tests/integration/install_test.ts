/**
 * The install, as an operator does it, on scratch hosts (tests/integration/_harness/
 * scratch_host.ts: a chroot with the real host's /usr under a scratch overlay, and its own /etc,
 * /run, /var and /usr/local):
 *
 * - the package: `deno task package`'s .deb (scripts/package.sh, nfpm) installed with dpkg into
 *   the scratch host's own package database, then the README's quick start as written (every shell
 *   block after a `<!-- tested: NAME -->` line runs unchanged, as root); the kubeconfig recipe and
 *   the BGP block of docs/; remove keeps /etc/keelson, purge removes what the package made;
 * - by hand: docs/install.md's steps from a checkout, then the same quick start;
 * - a host installed by an earlier README: refused by the unit's own check until docs/install.md's
 *   upgrade block has run.
 *
 * After each, as the User=/Group= of the installed keelson.service, its own `ExecStartPre=` keelson
 * check runs on the installed inventory, files are read as that user and as BIRD's (keepalived's
 * and BIRD's files are root's: only the root step, keelson-apply.service, writes them), and
 * `systemd-analyze verify` and `security --offline` check the installed units (keelson.service
 * and keelson-apply.service, with the distribution's keepalived and BIRD units).
 *
 * The binary: `deno compile` cannot fetch its runtime here, so the package and the checkout's
 * dist/keelson-x86_64 hold a stand-in that runs the bundle (`deno bundle` of main.ts) with exactly
 * the permission and V8 flags scripts/compile.sh bakes in. systemctl runs offline: `enable` writes
 * its links, `daemon-reload`, `start` and `restart` print that they are skipped.
 *
 * Needs root (chroot, mounts, file owners) and systemd's tools, dpkg, Go (nfpm is built from the
 * Go module proxy, once), keepalived (its unit), kubectl (the kubeconfig recipe) and BIRD (the BGP
 * block): without them it is skipped with the reason, and fails under
 * KEELSON_REQUIRE_INTEGRATION=1.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { bundleKeelson } from "../bench/_bundle.ts";
import { compiledRuntimeFlags, compilePermissions } from "./_harness/permissions.ts";
import { quote, ScratchHost } from "./_harness/scratch_host.ts";

const REPO = fileURLToPath(new URL("../../", import.meta.url));
/** Where the README's commands run from: a checkout in root's home, as an operator's would be. */
const CHECKOUT = "/root/keelson";
/** The bundle and deno inside the scratch host. */
const BUNDLE = "/opt/keelson-test/keelson.js";
const DENO = "/opt/keelson-test/deno";
/** keepalived.conf as an earlier README installed it: the whole file, including conf.d/*.conf. */
const OLD_KEEPALIVED_CONF = [
  "# /etc/keepalived/keepalived.conf on every control-plane host.",
  "# Keelson owns /etc/keepalived/conf.d/keelson.conf (VRRP instances for the control-plane VIP and",
  "# the LoadBalancer VIPs); it validates each version with `keepalived -t` before it reloads.",
  "global_defs {",
  "    # Keelson's instances use no scripts (health comes through track_file), but keep script",
  "    # security on so nothing else can add an unchecked one.",
  "    enable_script_security",
  "    script_user root",
  "    # Keelson's adverts are 200 ms apart, so a backup declares the master dead after ~0.7 s. A",
  "    # VRRP process that is not scheduled in time (a busy host, a large reload) would let a backup",
  "    # take over while the master still holds the VIPs. keepalived raises itself to realtime",
  "    # scheduling when it finds itself late by more than 100 ms.",
  "    max_auto_priority",
  "    min_auto_priority_delay 100000",
  "    vrrp_priority -10",
  "}",
  "",
  "include /etc/keepalived/conf.d/*.conf",
  "",
].join("\n");

/** keelson.service as the package installs it, and as the by-hand steps do. */
const PACKAGE_UNIT = "/usr/lib/systemd/system/keelson.service";
const LOCAL_UNIT = "/etc/systemd/system/keelson.service";
/** Keelson's units: the agent and the root step that installs what it stages. */
const KEELSON_UNITS = ["keelson.service", "keelson-apply.service"];
/**
 * Highest accepted `systemd-analyze security` exposure of each installed unit, in tenths (as
 * tests/integration/systemd_units_test.ts).
 */
const MAX_EXPOSURE_TENTHS: Record<string, number> = {
  "keelson.service": 17,
  "keelson-apply.service": 15,
};
const TOKEN = "keelson-install-test-token";

const required = Deno.env.get("KEELSON_REQUIRE_INTEGRATION") === "1";

function onPath(name: string): boolean {
  return (Deno.env.get("PATH") ?? "/usr/bin:/bin").split(":").some((dir) => {
    try {
      return Deno.statSync(`${dir}/${name}`).isFile;
    } catch {
      return false;
    }
  });
}

function fileExists(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/** Why the install cannot run here, or undefined. */
function whyNot(): string | undefined {
  if (Deno.uid() !== 0) {
    return "not running as root (the install owns files to user keelson, chroots and mounts)";
  }
  const tools = [
    "unshare",
    "chroot",
    "mount",
    "setpriv",
    "runuser",
    "systemd-sysusers",
    "systemd-tmpfiles",
    "systemd-analyze",
    "systemctl",
    "openssl",
    "dpkg",
    "go",
  ].filter((tool) => !onPath(tool));
  if (tools.length > 0) return `not installed: ${tools.join(", ")}`;
  if (!fileExists("/lib/systemd/system/keepalived.service")) {
    return "keepalived is not installed (the install enables its unit)";
  }
  return undefined;
}

/** Why the kubeconfig recipe cannot run here. */
const noKubectl = onPath("kubectl") ? undefined : "kubectl is not installed";
/** Why the BGP block cannot run here: BIRD's package makes group bird and bird.service. */
const noBird = fileExists("/lib/systemd/system/bird.service") && fileExists("/usr/sbin/bird")
  ? undefined
  : "BIRD (bird2) is not installed";

const missing = whyNot();
if (missing && !required) {
  // deno-lint-ignore no-console
  console.error(`\n*** SKIPPING the README install test: ${missing} ***\n`);
}

/**
 * The shell blocks after `<!-- tested: NAME -->` lines, by NAME, in the order of the files given:
 * a block may be indented (inside a list item); its lines lose that indentation.
 */
function testedBlocks(markdown: string): Map<string, string[]> {
  const blocks = new Map<string, string[]>();
  const marker = /^( *)<!-- tested: ([a-z-]+)\b.*-->\n\n\1```sh\n([\s\S]*?)\n\1```$/gm;
  for (const [, indent, name, body] of markdown.matchAll(marker)) {
    const lines = body!.split("\n").map((line) =>
      line.startsWith(indent!) ? line.slice(indent!.length) : line
    );
    blocks.set(name!, [...(blocks.get(name!) ?? []), lines.join("\n")]);
  }
  const markers = markdown.match(/^ *<!-- tested:/gm)?.length ?? 0;
  const found = [...blocks.values()].reduce((n, list) => n + list.length, 0);
  assert.equal(found, markers, "every <!-- tested: --> line must be followed by a ```sh block");
  return blocks;
}

/** README.md and every page of docs/, one after the other. */
async function manual(): Promise<string> {
  const pages = [`${REPO}README.md`];
  for await (const entry of Deno.readDir(`${REPO}docs`)) {
    if (entry.name.endsWith(".md")) pages.push(`${REPO}docs/${entry.name}`);
  }
  const texts = await Promise.all(pages.map((page) => Deno.readTextFile(page)));
  return texts.join("\n");
}

/** The manual's blocks named `name`, joined; fails when there are none. */
function readmeSteps(blocks: Map<string, string[]>, name: string): string {
  const list = blocks.get(name);
  assert.ok(list && list.length > 0, `the manual has no "<!-- tested: ${name} -->" block`);
  return list.join("\n");
}

/**
 * The steps of an earlier README, as a host installed with them has its files: the binary in
 * /usr/local/bin, the unit (then naming that binary) in /etc/systemd/system, the whole
 * keepalived.conf of that time (including conf.d/*.conf), and everything in /etc/keelson root's.
 */
const OLD_STEPS = `
install -m 0755 dist/keelson-x86_64 /usr/local/bin/keelson
install -d -m 0755 /etc/keelson
install -m 0640 deploy/examples/minimal.toml /etc/keelson/keelson.toml
install -d /etc/keepalived/conf.d
install -m 0644 /tmp/old-keepalived.conf /etc/keepalived/keepalived.conf
useradd --system --no-create-home --shell /usr/sbin/nologin keelson
sed 's|/usr/bin/keelson|/usr/local/bin/keelson|' deploy/systemd/keelson.service \
  >/etc/systemd/system/keelson.service
# the kubeconfig as kubectl writes it (0600), the metrics token as root's umask makes it
install -m 0600 /tmp/old-kubeconfig /etc/keelson/kubeconfig
head -c 32 /dev/urandom | base64 >/etc/keelson/metrics-token
`;

/** The file of Keelson's unit `unit` systemd runs: /etc's copy over the package's. */
async function unitFile(host: ScratchHost, unit = "keelson.service"): Promise<string> {
  const local = `/etc/systemd/system/${unit}`;
  return (await exists(host.path(local))) ? local : `/usr/lib/systemd/system/${unit}`;
}

async function exists(path: string): Promise<boolean> {
  return await Deno.lstat(path).then(() => true, () => false);
}

/** keelson.service and its drop-ins as systemd reads them: the [Service] settings, in order. */
async function serviceSettings(host: ScratchHost): Promise<Array<[string, string]>> {
  // drop-ins from /usr/lib and /etc, ordered by file name; /etc's wins a name both have
  const dropIns = new Map<string, string>();
  for (const unit of [PACKAGE_UNIT, LOCAL_UNIT]) {
    try {
      for await (const entry of Deno.readDir(host.path(`${unit}.d`))) {
        if (entry.name.endsWith(".conf")) {
          dropIns.set(entry.name, host.path(`${unit}.d/${entry.name}`));
        }
      }
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
  }
  const names = [...dropIns.keys()].sort();
  const files = [host.path(await unitFile(host)), ...names.map((name) => dropIns.get(name)!)];
  const settings: Array<[string, string]> = [];
  for (const file of files) {
    let section = "";
    for (const line of (await Deno.readTextFile(file)).split("\n")) {
      const header = line.match(/^\[(\w+)\]$/);
      if (header) section = header[1]!;
      const setting = line.match(/^(\w+)=(.*)$/);
      if (setting && section === "Service") settings.push([setting[1]!, setting[2]!]);
    }
  }
  return settings;
}

/**
 * The unit's `ExecStartPre=` keelson check, run as its User=, Group= and SupplementaryGroups=,
 * from /, with the environment systemd gives a service of that user.
 */
async function unitCheck(host: ScratchHost): Promise<{ code: number; output: string }> {
  const settings = await serviceSettings(host);
  const last = (key: string) => settings.filter(([k]) => k === key).at(-1)?.[1];
  const user = last("User");
  const group = last("Group");
  assert.ok(user && group, "keelson.service names User= and Group=");
  const extra = settings.filter(([k]) => k === "SupplementaryGroups").flatMap(([, v]) =>
    v.split(/\s+/).filter((g) => g !== "")
  );
  const checks = settings.filter(([k, v]) => k === "ExecStartPre" && / check /.test(v));
  assert.equal(checks.length, 1, "keelson.service runs one keelson check before it starts");
  const line = checks[0]![1];
  assert.ok(!/^[-+!@:]/.test(line), `the check runs as the unit's user: ${line}`);
  const groups = `"$(id -G ${quote(user)} | tr ' ' ,)"${extra.map((g) => `,${quote(g)}`).join("")}`;
  return await host.run(
    `env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin HOME=/ USER=${quote(user)} ` +
      `LOGNAME=${quote(user)} setpriv --reuid=${quote(user)} --regid=${quote(group)} ` +
      `--groups=${groups} -- ${line}`,
  );
}

/** Runs a shell command in the host as `user` with its groups (setpriv --init-groups). */
function asUser(host: ScratchHost, user: string, script: string, groups?: string) {
  const set = groups ? `--groups=${groups}` : "--init-groups";
  return host.run(
    `cd / && setpriv --reuid=${user} --regid=${user} ${set} -- /bin/sh -c ${quote(script)}`,
  );
}

/** A stat of a path inside the host: owner, group and permission bits (with setgid). */
async function statIn(host: ScratchHost, path: string) {
  const info = await Deno.stat(host.path(path));
  return { uid: info.uid, gid: info.gid, mode: (info.mode ?? 0) & 0o7777 };
}

/** A checkout of the repository in the host: deploy/ and the "binary" in dist/. */
async function writeCheckout(host: ScratchHost): Promise<void> {
  const dir = host.path(CHECKOUT);
  await Deno.mkdir(`${dir}/dist`, { recursive: true });
  const cp = await new Deno.Command("cp", { args: ["-a", `${REPO}deploy`, `${dir}/`] }).output();
  assert.ok(cp.success, "copy deploy/ into the checkout");
  const docs = await new Deno.Command("cp", { args: ["-a", `${REPO}docs`, `${dir}/`] }).output();
  assert.ok(docs.success, "copy docs/ into the checkout");
  await Deno.copyFile(`${REPO}README.md`, `${dir}/README.md`);
  await Deno.writeTextFile(`${dir}/dist/keelson-x86_64`, await standIn(), { mode: 0o755 });
}

/** The stand-in for the compiled binary: the bundle with exactly the baked permission and V8 flags. */
async function standIn(): Promise<string> {
  const flags = ["--no-config", ...compiledRuntimeFlags(), ...await compilePermissions()];
  return [
    "#!/bin/sh",
    "# keelson as compiled: the bundle with exactly the baked permission and V8 flags",
    'DENO_DIR="/var/tmp/keelson-deno-$(id -u)" && export DENO_DIR',
    `exec ${DENO} run ${flags.map(quote).join(" ")} ${BUNDLE} "$@"`,
    "",
  ].join("\n");
}

/**
 * `deno task package`'s .deb around the stand-in, built by scripts/package.sh as an operator
 * builds it (nfpm from the Go module proxy, cached).
 * @param dir where the package is written
 * @returns the .deb's path
 */
async function buildPackage(dir: string): Promise<string> {
  await Deno.writeTextFile(`${dir}/keelson`, await standIn(), { mode: 0o755 });
  const out = await new Deno.Command("bash", {
    args: [`${REPO}scripts/package.sh`],
    cwd: REPO,
    env: {
      KEELSON_BINARY: `${dir}/keelson`,
      KEELSON_PACKAGE_ARCH: "amd64",
      KEELSON_PACKAGE_OUT: dir,
    },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  assert.ok(out.success, `scripts/package.sh failed:\n${new TextDecoder().decode(out.stderr)}`);
  const deb = text.split("\n").find((line) => line.endsWith(".deb"));
  const rpm = text.split("\n").find((line) => line.endsWith(".x86_64.rpm"));
  assert.ok(deb && rpm, `scripts/package.sh named no .deb and .rpm:\n${text}`);
  for (const file of [deb, rpm]) {
    // deno-lint-ignore no-console
    console.error(
      `FIGURE ${file.slice(file.lastIndexOf("/") + 1)} ${(await Deno.stat(file)).size} bytes`,
    );
  }
  return deb;
}

/** A CA certificate, as /etc/kubernetes/pki/ca.crt of a control-plane host. */
async function writeCa(dir: string): Promise<string> {
  const out = await new Deno.Command("openssl", {
    args: [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:P-256",
      "-nodes",
      "-subj",
      "/CN=keelson-install-test-ca",
      "-days",
      "2",
      "-keyout",
      `${dir}/ca.key`,
      "-out",
      `${dir}/ca.crt`,
    ],
    stdout: "null",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  return await Deno.readTextFile(`${dir}/ca.crt`);
}

/** A kubeconfig as the README's recipe makes it (server, CA, token, context). */
function kubeconfigText(caPem: string): string {
  return [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    "- name: k",
    "  cluster:",
    "    server: https://10.0.0.10:6443",
    `    certificate-authority-data: ${btoa(caPem)}`,
    "users:",
    "- name: keelson",
    "  user:",
    `    token: ${TOKEN}`,
    "contexts:",
    "- name: k",
    "  context:",
    "    cluster: k",
    "    user: keelson",
    "current-context: k",
    "",
  ].join("\n");
}

/** Where an installed unit file is: Keelson's where the install put it, the distribution's in /lib. */
async function unitPath(host: ScratchHost, unit: string): Promise<string> {
  return KEELSON_UNITS.includes(unit) ? await unitFile(host, unit) : `/lib/systemd/system/${unit}`;
}

function ok(result: { code: number; output: string }, what: string): void {
  assert.equal(result.code, 0, `${what} failed:\n${result.output}`);
}

/** User keelson, its directories and the files the install put in /etc/keelson. */
async function assertAccountAndFiles(host: ScratchHost): Promise<{ uid: number; gid: number }> {
  const uid = await host.idOf("passwd", "keelson");
  const gid = await host.idOf("group", "keelson");
  assert.ok(uid !== undefined && uid > 0 && uid < 1000, `keelson is a system user: ${uid}`);
  assert.ok(gid !== undefined);
  const passwd = await Deno.readTextFile(host.path("/etc/passwd"));
  assert.match(passwd, new RegExp(`^keelson:x:${uid}:${gid}:[^:]*:/:/usr/sbin/nologin$`, "m"));
  assert.deepEqual(await statIn(host, "/etc/keelson"), { uid: 0, gid, mode: 0o2750 });
  for (const file of ["/etc/keelson/keelson.toml", "/etc/keelson/metrics-token"]) {
    assert.deepEqual(await statIn(host, file), { uid: 0, gid, mode: 0o640 }, file);
  }
  // the daemons' files are root's (the root step installs them); keelson's is /run/keelson
  assert.deepEqual(await statIn(host, "/etc/keepalived/conf.d"), { uid: 0, gid: 0, mode: 0o755 });
  assert.deepEqual(await statIn(host, "/run/keelson"), { uid, gid, mode: 0o755 });
  assert.deepEqual(await statIn(host, "/run/keelson/stage"), { uid, gid, mode: 0o750 });
  // what the install puts in place is the minimal VRRP inventory, not the full example
  assert.equal(
    await Deno.readTextFile(host.path("/etc/keelson/keelson.toml")),
    await Deno.readTextFile(`${REPO}deploy/examples/minimal.toml`),
  );
  return { uid, gid };
}

/** The quick start's keepalived.conf: Keelson's include, once. */
async function assertKeepalivedInclude(host: ScratchHost, before: string): Promise<void> {
  const text = await Deno.readTextFile(host.path("/etc/keepalived/keepalived.conf"));
  assert.equal(text, `${before}include /etc/keepalived/keelson-include.conf\n`);
  const include = await Deno.readTextFile(host.path("/etc/keepalived/keelson-include.conf"));
  // Keelson's file only: keepalived runs as root whatever conf.d holds
  assert.deepEqual(include.match(/^\s*include .*$/gm), [
    "include /etc/keepalived/conf.d/keelson.conf",
  ]);
}

/** `systemd-analyze verify` on the installed units: no error, no warning. */
async function verifyUnits(host: ScratchHost, withBird: boolean): Promise<void> {
  const units = [...KEELSON_UNITS, "keepalived.service"];
  if (withBird) units.push("bird.service");
  for (const unit of units) {
    // --man=no: the distribution's units name man pages, which a host need not have
    const verify = await host.run(`systemd-analyze verify --man=no ${await unitPath(host, unit)}`);
    ok(verify, `systemd-analyze verify ${unit}`);
    // only the trace of the command itself: no error, no warning
    assert.deepEqual(
      verify.output.split("\n").filter((l) => !l.startsWith("+")),
      [],
      verify.output,
    );
  }
}

/**
 * `systemd-analyze security --offline` of each installed Keelson unit: fails above its bound.
 * @returns the exposure of each unit, in tenths
 */
async function assertExposure(host: ScratchHost): Promise<Record<string, number>> {
  const levels: Record<string, number> = {};
  for (const unit of KEELSON_UNITS) {
    const bound = MAX_EXPOSURE_TENTHS[unit]!;
    const result = await host.run(
      `systemd-analyze security --offline=yes --no-pager --threshold=${bound} ` +
        await unitFile(host, unit),
    );
    ok(result, `systemd-analyze security --offline ${unit}`);
    const level = result.output.match(/Overall exposure level for [^:]+: ([\d.]+)/)?.[1];
    assert.ok(level, result.output);
    levels[unit] = Math.round(Number(level) * 10);
    assert.ok(levels[unit] <= bound, `${unit}: exposure ${levels[unit] / 10}`);
  }
  return levels;
}

/** Each Keelson unit's Documentation= files exist on the host. */
async function assertDocumentation(host: ScratchHost): Promise<void> {
  for (const unit of KEELSON_UNITS) {
    const docs = [...(await Deno.readTextFile(host.path(await unitFile(host, unit))))
      .matchAll(/^Documentation=file:\/\/(\S+)$/gm)].map((m) => m[1]!);
    assert.ok(docs.length > 0, `${unit} names its documentation`);
    for (const doc of docs) assert.ok((await Deno.stat(host.path(doc))).isFile, `${unit}: ${doc}`);
  }
}

/** The quick start enabled both Keelson units, each from `dir`. */
async function assertEnabled(host: ScratchHost, dir: RegExp): Promise<void> {
  for (const unit of KEELSON_UNITS) {
    const wanted = host.path(`/etc/systemd/system/multi-user.target.wants/${unit}`);
    const target = await Deno.readLink(wanted);
    assert.match(target, dir, `${unit} enabled from ${target}`);
    assert.ok(target.endsWith(`/${unit}`), target);
  }
}

Deno.test({
  name:
    "install: the package, the README's quick start and docs/install.md give a host user keelson can start on",
  ignore: missing !== undefined && !required,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    if (missing) throw new Error(`Cannot run the install test: ${missing}`);
    const blocks = testedBlocks(await manual());
    const quickPackage = readmeSteps(blocks, "quickstart-package");
    const quickstart = readmeSteps(blocks, "quickstart");
    const install = readmeSteps(blocks, "install");
    const upgrade = readmeSteps(blocks, "upgrade");
    const kubeconfig = readmeSteps(blocks, "kubeconfig");
    const bgp = readmeSteps(blocks, "bgp");
    await using bundle = await bundleKeelson();
    const binds: Array<[string, string]> = [[bundle.path, BUNDLE], [Deno.execPath(), DENO]];
    const work = await Deno.makeTempDir({ prefix: "keelson-install-" });
    try {
      const caPem = await writeCa(work);
      const deb = await buildPackage(work);
      const debName = deb.slice(deb.lastIndexOf("/") + 1);

      await t.step("the package and the quick start on a new host", async (t) => {
        await using host = await ScratchHost.create({ binds });
        await Deno.copyFile(deb, host.path(`/root/${debName}`));
        ok(await host.run(quickPackage, { cwd: "/root" }), "the README's package step");
        // the package starts and enables nothing, and writes no keepalived.conf
        assert.ok(!(await exists(host.path("/etc/systemd/system/multi-user.target.wants"))));
        assert.ok(!(await exists(host.path("/etc/keepalived/keepalived.conf"))));
        ok(await host.run(quickstart, { cwd: "/root" }), "the README's quick start");

        const { gid } = await assertAccountAndFiles(host);
        await assertKeepalivedInclude(host, "");
        const wanted = host.path("/etc/systemd/system/multi-user.target.wants/keelson.service");
        // systemctl links the first path of its search path that holds the unit: /lib is /usr/lib
        await assertEnabled(host, /^(\/usr)?\/lib\/systemd\/system\//);
        await assertDocumentation(host);
        const check = await unitCheck(host);
        ok(check, "the unit's keelson check as user keelson");
        assert.match(check.output, /\/etc\/keelson\/keelson\.toml: OK/);

        await t.step("an operator's keepalived.conf is kept: one line added, once", async () => {
          const mine = "global_defs {\n    router_id cp-1\n}\n";
          await Deno.writeTextFile(host.path("/etc/keepalived/keepalived.conf"), mine);
          ok(await host.run(`dpkg -i /root/${debName}`), "dpkg -i again (a reinstall)");
          assert.equal(await Deno.readTextFile(host.path("/etc/keepalived/keepalived.conf")), mine);
          ok(await host.run(quickstart, { cwd: "/root" }), "the quick start");
          ok(await host.run(quickstart, { cwd: "/root" }), "the quick start, twice");
          await assertKeepalivedInclude(host, mine);
        });

        await t.step("the kubeconfig recipe: a file user keelson reads, no one else", async () => {
          if (noKubectl) {
            if (required) throw new Error(noKubectl);
            // deno-lint-ignore no-console
            console.error(`*** SKIPPING the kubeconfig recipe: ${noKubectl} ***`);
            return;
          }
          await Deno.mkdir(host.path("/etc/kubernetes/pki"), { recursive: true });
          await Deno.writeTextFile(host.path("/etc/kubernetes/pki/ca.crt"), caPem);
          ok(await host.run(kubeconfig, { env: { TOKEN } }), "the kubeconfig recipe");
          const file = "/etc/keelson/kubeconfig";
          assert.deepEqual(await statIn(host, file), { uid: 0, gid, mode: 0o640 });
          const read = await asUser(host, "keelson", `cat ${file}`);
          ok(read, "user keelson reads the kubeconfig");
          assert.match(read.output, new RegExp(`token: ${TOKEN}`));
          assert.match(read.output, /certificate-authority-data: \S{100,}/);
          ok(await unitCheck(host), "the unit's check with the kubeconfig in place");
        });

        await t.step(
          "BGP: BIRD's file root's, its socket keelson's to reach, both BIRD's to read",
          async () => {
            if (noBird) {
              if (required) throw new Error(noBird);
              // deno-lint-ignore no-console
              console.error(`*** SKIPPING the BGP block: ${noBird} ***`);
              return;
            }
            ok(await host.run(bgp, { cwd: "/root" }), "docs/bgp.md's block");
            const bird = await host.idOf("group", "bird");
            const birdUser = await host.idOf("passwd", "bird");
            assert.ok(bird !== undefined && birdUser !== undefined);
            assert.deepEqual(await statIn(host, "/etc/keelson/bird"), {
              uid: 0,
              gid: bird,
              mode: 0o2750,
            });
            assert.deepEqual(await statIn(host, "/run/bird"), {
              uid: birdUser,
              gid: bird,
              mode: 0o775,
            });
            // as the unit runs Keelson (SupplementaryGroups=bird): BIRD's socket directory, and
            // not BIRD's file, which the root step installs
            const groups = `${gid},${bird}`;
            ok(
              await asUser(host, "keelson", "touch /run/bird/probe", groups),
              "keelson in /run/bird",
            );
            const refused = await asUser(
              host,
              "keelson",
              "echo 'include \"/etc/shadow\";' >/etc/keelson/bird/keelson.conf",
              groups,
            );
            assert.notEqual(refused.code, 0, "keelson cannot write BIRD's file");
            // as the root step installs it (umask 022, mode 0640 in the setgid directory)
            const wrote = await asUser(
              host,
              "root",
              "umask 022 && echo 'router id 10.0.0.11;' >/etc/keelson/bird/keelson.conf && " +
                "chmod 0640 /etc/keelson/bird/keelson.conf",
              "0",
            );
            ok(wrote, "root writes BIRD's file");
            assert.equal((await statIn(host, "/etc/keelson/bird/keelson.conf")).gid, bird);
            const birdReads = await asUser(host, "bird", "cat /etc/keelson/bird/keelson.conf");
            ok(birdReads, "BIRD reads its file through /etc/keelson");
            assert.match(birdReads.output, /router id 10\.0\.0\.11;/);
            const birdPeeks = await asUser(host, "bird", "cat /etc/keelson/keelson.toml");
            assert.notEqual(birdPeeks.code, 0, "BIRD must not read the inventory");
            assert.match(birdPeeks.output, /Permission denied/);
            const birdLists = await asUser(host, "bird", "ls /etc/keelson");
            assert.notEqual(birdLists.code, 0, "BIRD must not list /etc/keelson");
            ok(await unitCheck(host), "the unit's check with the BGP drop-in");
          },
        );

        await t.step("the unit's pre-start makes a directory that went since boot", async () => {
          const settings = await serviceSettings(host);
          const asRoot = settings.filter(([k, v]) => k === "ExecStartPre" && v.startsWith("+"))
            .map(([, v]) => v.slice(1));
          assert.ok(asRoot.length > 0, "keelson.service has a '+' ExecStartPre");
          const gone = ["/run/keelson", "/run/keelson/stage", "/etc/keepalived/conf.d"];
          if (!noBird) gone.push("/etc/keelson/bird", "/run/bird");
          const before = await Promise.all(gone.map((path) => statIn(host, path)));
          const script = `rm -rf ${gone.join(" ")} && chmod 0755 /etc/keelson\n${
            asRoot.join("\n")
          }`;
          ok(await host.run(script), "the unit's '+' ExecStartPre lines");
          assert.deepEqual(await Promise.all(gone.map((path) => statIn(host, path))), before);
          assert.equal((await statIn(host, "/etc/keelson")).mode, 0o2750);
          ok(await unitCheck(host), "the unit's check after them");
        });

        await t.step("systemd-analyze verify and security on the installed units", async () => {
          await verifyUnits(host, !noBird);
          for (const [unit, tenths] of Object.entries(await assertExposure(host))) {
            // deno-lint-ignore no-console
            console.error(`FIGURE installed ${unit} exposure level ${tenths / 10}`);
          }
        });

        await t.step("remove keeps /etc/keelson; purge removes what the package made", async () => {
          ok(await host.run("dpkg --remove keelson"), "dpkg --remove keelson");
          assert.ok(!(await exists(host.path("/usr/bin/keelson"))), "the binary is gone");
          for (const unit of KEELSON_UNITS) {
            assert.ok(!(await exists(host.path(`/usr/lib/systemd/system/${unit}`))), unit);
            const link = `/etc/systemd/system/multi-user.target.wants/${unit}`;
            assert.ok(!(await exists(host.path(link))), `${unit} is no longer enabled`);
          }
          assert.ok(!(await exists(wanted)));
          for (const file of ["keelson.toml", "metrics-token"]) {
            assert.ok(await exists(host.path(`/etc/keelson/${file}`)), `remove kept ${file}`);
          }
          assert.ok(await exists(host.path("/etc/keepalived/keelson-include.conf")));
          // what the root step leaves in keepalived's directory: the file and its outcome
          ok(
            await host.run(
              "echo '# vrrp' >/etc/keepalived/conf.d/keelson.conf && " +
                "echo '{}' >/etc/keepalived/conf.d/.keelson.conf.outcome",
            ),
            "the root step's files",
          );
          const purge = await host.run("dpkg --purge keelson");
          ok(purge, "dpkg --purge keelson");
          for (const path of ["keelson/keelson.toml", "keelson/metrics-token", "keelson/bird"]) {
            assert.ok(!(await exists(host.path(`/etc/${path}`))), `purge removed /etc/${path}`);
          }
          assert.ok(!(await exists(host.path("/etc/keepalived/keelson-include.conf"))));
          assert.ok(!(await exists(host.path("/run/keelson"))));
          // the root step's files in conf.d went, and the directory with them
          assert.ok(!(await exists(host.path("/etc/keepalived/conf.d"))));
          // the operator's kubeconfig stays, and so does its directory, named
          if (!noKubectl) {
            assert.ok(await exists(host.path("/etc/keelson/kubeconfig")));
            assert.match(purge.output, /\/etc\/keelson kept: .*kubeconfig/);
          }
          // the operator's keepalived.conf is never the package's to remove
          assert.ok(await exists(host.path("/etc/keepalived/keepalived.conf")));
        });
      });

      await t.step("by hand: docs/install.md's steps and the quick start", async () => {
        await using host = await ScratchHost.create({ binds });
        await writeCheckout(host);
        ok(await host.run(install, { cwd: CHECKOUT }), "docs/install.md's install block");
        ok(await host.run(quickstart, { cwd: CHECKOUT }), "the README's quick start");
        await assertAccountAndFiles(host);
        await assertKeepalivedInclude(host, "");
        await assertEnabled(host, /^\/etc\/systemd\/system\//);
        await assertDocumentation(host);
        ok(await unitCheck(host), "the unit's keelson check as user keelson");
        await verifyUnits(host, false);
        await assertExposure(host);
      });

      await t.step("a host installed by an earlier README: refused until upgraded", async () => {
        await using host = await ScratchHost.create({ binds });
        await writeCheckout(host);
        await Deno.copyFile(deb, host.path(`${CHECKOUT}/${debName}`));
        await Deno.writeTextFile(host.path("/tmp/old-kubeconfig"), kubeconfigText(caPem));
        await Deno.writeTextFile(host.path("/tmp/old-keepalived.conf"), OLD_KEEPALIVED_CONF);
        ok(await host.run(OLD_STEPS, { cwd: CHECKOUT }), "the earlier install steps");
        // keepalived's directory and file as a version before the root step left them: keelson's
        ok(
          await host.run(
            "echo '# vrrp' >/etc/keepalived/conf.d/keelson.conf && " +
              "chown -R keelson:keelson /etc/keepalived/conf.d",
          ),
          "keepalived's files given to keelson",
        );
        // as root, the check the earlier README ran passes: that is how the fault stayed hidden
        ok(
          await host.run("keelson check --config /etc/keelson/keelson.toml"),
          "keelson check as root",
        );
        const refused = await unitCheck(host);
        assert.equal(refused.code, 1, refused.output);
        assert.match(refused.output, /\/etc\/keelson\/keelson\.toml/);
        assert.match(refused.output, /not readable by user keelson \(uid \d+\)/);
        assert.match(
          refused.output,
          /chown root:keelson \/etc\/keelson\/keelson\.toml && chmod 0640 \/etc\/keelson\/keelson\.toml/,
        );

        const inventory = await Deno.readTextFile(host.path("/etc/keelson/keelson.toml"));
        ok(await host.run(upgrade, { cwd: CHECKOUT }), "docs/install.md's upgrade block");
        assert.equal(
          await unitFile(host),
          PACKAGE_UNIT,
          "the old unit no longer shadows the package's",
        );
        assert.equal(
          await Deno.readTextFile(host.path("/etc/keelson/keelson.toml")),
          inventory,
          "the upgrade kept the operator's inventory",
        );
        const keepalived = await Deno.readTextFile(host.path("/etc/keepalived/keepalived.conf"));
        assert.match(keepalived, /^include \/etc\/keepalived\/keelson-include\.conf$/m);
        assert.doesNotMatch(keepalived, /conf\.d\/\*\.conf/);
        const gid = await host.idOf("group", "keelson");
        for (const file of ["keelson.toml", "kubeconfig", "metrics-token"]) {
          const path = `/etc/keelson/${file}`;
          assert.deepEqual(await statIn(host, path), { uid: 0, gid, mode: 0o640 }, path);
        }
        ok(await asUser(host, "keelson", "cat /etc/keelson/kubeconfig"), "keelson reads it");
        // the daemons' files are root's now, and the root step is enabled beside the agent
        assert.deepEqual(await statIn(host, "/etc/keepalived/conf.d"), {
          uid: 0,
          gid: 0,
          mode: 0o755,
        });
        assert.deepEqual(await statIn(host, "/etc/keepalived/conf.d/keelson.conf"), {
          uid: 0,
          gid: 0,
          mode: 0o644,
        });
        const stuck = await asUser(host, "keelson", "echo x >>/etc/keepalived/conf.d/keelson.conf");
        assert.notEqual(stuck.code, 0, "keelson cannot edit keepalived's file after the upgrade");
        assert.ok(
          await exists(
            host.path("/etc/systemd/system/multi-user.target.wants/keelson-apply.service"),
          ),
          "the upgrade enables keelson-apply.service",
        );
        ok(await unitCheck(host), "the unit's check after the upgrade");
      });
    } finally {
      await Deno.remove(work, { recursive: true });
    }
  },
});
