/**
 * The README's install steps, as written, on a scratch host (tests/integration/_harness/
 * scratch_host.ts: a chroot with the real host's /usr, and its own /etc, /run and /usr/local):
 * every shell block of README.md after a `<!-- tested: NAME -->` line runs unchanged, as root,
 * from a checkout. Then, as the User=/Group= of the installed keelson.service, its own
 * `ExecStartPre=` keelson check runs on the installed inventory, files are read as that user and as
 * BIRD's, and `systemd-analyze verify` checks the installed units against the distribution's
 * keepalived and BIRD units. A host installed by the README's earlier steps is refused by the same
 * check, naming the file and the user, until the README's upgrade block has run.
 *
 * The binary: `deno compile` cannot fetch its runtime here, so the checkout's
 * dist/keelson-x86_64 is a script that runs the bundle (`deno bundle` of main.ts) with exactly the
 * permission and V8 flags scripts/compile.sh bakes in. systemctl runs offline: `enable` writes its
 * links, `daemon-reload`, `start` and `restart` print that they are skipped.
 *
 * Needs root (chroot, mounts, file owners) and systemd's tools, keepalived (its unit), kubectl
 * (the kubeconfig recipe) and BIRD (the BGP block): without them it is skipped with the reason,
 * and fails under KEELSON_REQUIRE_INTEGRATION=1.
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
const UNIT = "/etc/systemd/system/keelson.service";
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

/** The README's shell blocks after `<!-- tested: NAME -->` lines, by NAME, in README order. */
function testedBlocks(markdown: string): Map<string, string[]> {
  const blocks = new Map<string, string[]>();
  const marker = /^<!-- tested: ([a-z]+)\b.*-->\n\n```sh\n([\s\S]*?)\n```$/gm;
  for (const [, name, body] of markdown.matchAll(marker)) {
    blocks.set(name!, [...(blocks.get(name!) ?? []), body!]);
  }
  const markers = markdown.match(/^<!-- tested:/gm)?.length ?? 0;
  const found = [...blocks.values()].reduce((n, list) => n + list.length, 0);
  assert.equal(found, markers, "every <!-- tested: --> line must be followed by a ```sh block");
  return blocks;
}

/** The README's blocks named `name`, joined; fails when there are none. */
function readmeSteps(blocks: Map<string, string[]>, name: string): string {
  const list = blocks.get(name);
  assert.ok(list && list.length > 0, `README.md has no "<!-- tested: ${name} -->" block`);
  return list.join("\n");
}

/** The steps of the README before this change, as a host installed with them has its files. */
const OLD_STEPS = `
install -m 0755 dist/keelson-x86_64 /usr/local/bin/keelson
install -d -m 0755 /etc/keelson
install -m 0640 deploy/examples/keelson.toml /etc/keelson/keelson.toml
install -d /etc/keepalived/conf.d
install -m 0644 deploy/keepalived/keepalived.conf /etc/keepalived/keepalived.conf
useradd --system --no-create-home --shell /usr/sbin/nologin keelson
install -m 0644 deploy/systemd/keelson.service /etc/systemd/system/keelson.service
# the kubeconfig as kubectl writes it (0600), the metrics token as root's umask makes it
install -m 0600 /tmp/old-kubeconfig /etc/keelson/kubeconfig
head -c 32 /dev/urandom | base64 >/etc/keelson/metrics-token
`;

/** keelson.service and its drop-ins as systemd reads them: the [Service] settings, in order. */
async function serviceSettings(host: ScratchHost): Promise<Array<[string, string]>> {
  const dropIns = host.path(`${UNIT}.d`);
  const names: string[] = [];
  try {
    for await (const entry of Deno.readDir(dropIns)) {
      if (entry.name.endsWith(".conf")) names.push(entry.name);
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  // systemd reads the unit, then its drop-ins in name order
  const files = [host.path(UNIT), ...names.sort().map((name) => `${dropIns}/${name}`)];
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
  await Deno.copyFile(`${REPO}README.md`, `${dir}/README.md`);
  const flags = ["--no-config", ...compiledRuntimeFlags(), ...await compilePermissions()];
  await Deno.writeTextFile(
    `${dir}/dist/keelson-x86_64`,
    [
      "#!/bin/sh",
      "# keelson as compiled: the bundle with exactly the baked permission and V8 flags",
      'DENO_DIR="/var/tmp/keelson-deno-$(id -u)" && export DENO_DIR',
      `exec ${DENO} run ${flags.map(quote).join(" ")} ${BUNDLE} "$@"`,
      "",
    ].join("\n"),
    { mode: 0o755 },
  );
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

/** Where the installed unit file is: Keelson's in /etc, the distribution's in /lib. */
function unitPath(unit: string): string {
  return unit === "keelson.service" ? UNIT : `/lib/systemd/system/${unit}`;
}

function ok(result: { code: number; output: string }, what: string): void {
  assert.equal(result.code, 0, `${what} failed:\n${result.output}`);
}

Deno.test({
  name: "README install: the steps as written give user keelson a host it can start on",
  ignore: missing !== undefined && !required,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    if (missing) throw new Error(`Cannot run the install test: ${missing}`);
    const blocks = testedBlocks(await Deno.readTextFile(`${REPO}README.md`));
    const install = readmeSteps(blocks, "install");
    const upgrade = readmeSteps(blocks, "upgrade");
    const kubeconfig = readmeSteps(blocks, "kubeconfig");
    const bgp = readmeSteps(blocks, "bgp");
    await using bundle = await bundleKeelson();
    const binds: Array<[string, string]> = [[bundle.path, BUNDLE], [Deno.execPath(), DENO]];
    const caDir = await Deno.makeTempDir({ prefix: "keelson-install-ca-" });
    try {
      const caPem = await writeCa(caDir);

      await t.step("a new host: every README block runs; the unit's check passes", async (t) => {
        await using host = await ScratchHost.create({ binds });
        await writeCheckout(host);
        ok(await host.run(install, { cwd: CHECKOUT }), "the README's install blocks");

        const uid = await host.idOf("passwd", "keelson");
        const gid = await host.idOf("group", "keelson");
        assert.ok(uid !== undefined && uid > 0 && uid < 1000, `keelson is a system user: ${uid}`);
        assert.ok(gid !== undefined);
        const passwd = await Deno.readTextFile(host.path("/etc/passwd"));
        assert.match(
          passwd,
          new RegExp(`^keelson:x:${uid}:${gid}:[^:]*:/:/usr/sbin/nologin$`, "m"),
        );
        assert.deepEqual(await statIn(host, "/etc/keelson"), { uid: 0, gid, mode: 0o2750 });
        for (const file of ["/etc/keelson/keelson.toml", "/etc/keelson/metrics-token"]) {
          assert.deepEqual(await statIn(host, file), { uid: 0, gid, mode: 0o640 }, file);
        }
        // the daemons' files are root's (the root step installs them); keelson's is /run/keelson
        assert.deepEqual(await statIn(host, "/etc/keepalived/conf.d"), {
          uid: 0,
          gid: 0,
          mode: 0o755,
        });
        assert.deepEqual(await statIn(host, "/run/keelson"), { uid, gid, mode: 0o755 });
        assert.deepEqual(await statIn(host, "/run/keelson/stage"), { uid, gid, mode: 0o750 });
        const wanted = host.path("/etc/systemd/system/multi-user.target.wants/keelson.service");
        assert.equal(await Deno.readLink(wanted), UNIT);
        // the unit's Documentation= is a file the steps installed
        const docs = [...(await Deno.readTextFile(host.path(UNIT)))
          .matchAll(/^Documentation=file:\/\/(\S+)$/gm)].map((m) => m[1]!);
        assert.ok(docs.length > 0, "keelson.service names its documentation");
        for (const doc of docs) assert.ok((await Deno.stat(host.path(doc))).isFile, doc);

        const check = await unitCheck(host);
        ok(check, "the unit's keelson check as user keelson");
        assert.match(check.output, /\/etc\/keelson\/keelson\.toml: OK/);

        await t.step("the kubeconfig recipe: a file user keelson reads, no one else", async () => {
          if (noKubectl) {
            if (required) throw new Error(noKubectl);
            // deno-lint-ignore no-console
            console.error(`*** SKIPPING the kubeconfig recipe: ${noKubectl} ***`);
            return;
          }
          await Deno.mkdir(host.path("/etc/kubernetes/pki"), { recursive: true });
          await Deno.writeTextFile(host.path("/etc/kubernetes/pki/ca.crt"), caPem);
          ok(await host.run(kubeconfig, { env: { TOKEN } }), "the README's kubeconfig recipe");
          const file = "/etc/keelson/kubeconfig";
          assert.deepEqual(await statIn(host, file), { uid: 0, gid, mode: 0o640 });
          const read = await asUser(host, "keelson", `cat ${file}`);
          ok(read, "user keelson reads the kubeconfig");
          assert.match(read.output, new RegExp(`token: ${TOKEN}`));
          assert.match(read.output, /certificate-authority-data: \S{100,}/);
          ok(await unitCheck(host), "the unit's check with the kubeconfig in place");
        });

        await t.step("BGP: BIRD's directories, writable by keelson, readable by BIRD", async () => {
          if (noBird) {
            if (required) throw new Error(noBird);
            // deno-lint-ignore no-console
            console.error(`*** SKIPPING the README's BGP block: ${noBird} ***`);
            return;
          }
          ok(await host.run(bgp, { cwd: CHECKOUT }), "the README's BGP block");
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
        });

        await t.step("the unit's pre-start makes a directory that went since boot", async () => {
          const settings = await serviceSettings(host);
          const asRoot = settings.filter(([k, v]) => k === "ExecStartPre" && v.startsWith("+"))
            .map(([, v]) => v.slice(1));
          assert.ok(asRoot.length > 0, "keelson.service has a '+' ExecStartPre");
          const gone = ["/run/keelson", "/etc/keepalived/conf.d"];
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

        await t.step(
          "systemd-analyze verify: the installed units, no error or warning",
          async () => {
            const units = ["keelson.service", "keepalived.service"];
            if (!noBird) units.push("bird.service");
            for (const unit of units) {
              // --man=no: the distribution's units name man pages, which a host need not have
              const verify = await host.run(`systemd-analyze verify --man=no ${unitPath(unit)}`);
              ok(verify, `systemd-analyze verify ${unit}`);
              // only the trace of the command itself: no error, no warning
              assert.deepEqual(
                verify.output.split("\n").filter((l) => !l.startsWith("+")),
                [],
                verify.output,
              );
            }
          },
        );
      });

      await t.step("a host installed by the earlier steps: refused until upgraded", async () => {
        await using host = await ScratchHost.create({ binds });
        await writeCheckout(host);
        await Deno.writeTextFile(host.path("/tmp/old-kubeconfig"), kubeconfigText(caPem));
        ok(await host.run(OLD_STEPS, { cwd: CHECKOUT }), "the earlier install steps");
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

        ok(await host.run(upgrade, { cwd: CHECKOUT }), "the README's upgrade block");
        const gid = await host.idOf("group", "keelson");
        for (const file of ["keelson.toml", "kubeconfig", "metrics-token"]) {
          const path = `/etc/keelson/${file}`;
          assert.deepEqual(await statIn(host, path), { uid: 0, gid, mode: 0o640 }, path);
        }
        ok(await asUser(host, "keelson", "cat /etc/keelson/kubeconfig"), "keelson reads it");
        ok(await unitCheck(host), "the unit's check after the upgrade");
      });
    } finally {
      await Deno.remove(caDir, { recursive: true });
    }
  },
});
