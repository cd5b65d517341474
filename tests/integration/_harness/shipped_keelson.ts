/**
 * Keelson as it ships, for every test that starts it: the program is `deno bundle`'s output of
 * main.ts (what scripts/compile.sh compiles), run with `--no-config` and exactly the permission and
 * V8 flags the binary carries (scripts/compile_permissions.txt, scripts/compile_v8_flags.txt), and
 * for the tests that drive keepalived, BIRD and the notify FIFO as an unprivileged user holding
 * no capability (`setpriv`), as deploy/systemd/keelson.service runs it, beside the root step
 * (`keelson apply-host-config --watch`, deploy/systemd/keelson-apply.service) that installs what
 * it stages (`service_manager.ts`). A missing permission or capability then fails a test instead
 * of a host.
 *
 * The runtime is `deno run` of the bundle, not the compiled binary: `deno compile` needs denort,
 * which cannot be downloaded here; the binary is that same bundle with the same flags baked in.
 *
 * Also here: the files such a Keelson may write live under the baked `--allow-write` directories
 * (`shippedDirs`), and the files it reads must be readable by the test user (`readableByTestUser`).
 *
 * @module
 */
import { fileURLToPath } from "node:url";
import { compiledRuntimeFlags, compilePermissions } from "./permissions.ts";
import { daemonsDir } from "../../../src/config/daemon_dir.ts";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const MAIN = `${ROOT}main.ts`;
/** Starts the agent and the root step as systemd starts keelson.service and keelson-apply.service. */
const SERVICE_MANAGER = fileURLToPath(new URL("./service_manager.ts", import.meta.url));

/** The unprivileged user the tests run Keelson as (a system user, created when absent). */
export const TEST_USER = "keelson-test";

/** The PATH systemd gives a system service (keelson.service sets no Environment=). */
const SERVICE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** Where Keelson writes, by purpose; each must be inside the baked `--allow-write` set. */
const WRITE_DIRS = {
  /** The directory of the default `[keepalived] config_file`. */
  keepalived: "/etc/keepalived/conf.d",
  /** The default `track_file_dir` (track files, staging; its `-daemons` sibling is made with it). */
  track: "/run/keelson",
  /** The directory of the default `[bgp] config_file`. */
  bird: "/etc/keelson/bird",
  /** BIRD's control socket directory. */
  birdSocket: "/run/bird",
} as const;

/**
 * Builds the bundle of main.ts (the one builder of the tests and benchmarks). Run with this
 * process's environment, so a registry reached through a proxy with its own CA works.
 * @param output the file to write
 * @throws {Error} with deno's message when bundling fails
 */
export async function buildBundle(output: string): Promise<void> {
  const bundled = await new Deno.Command(Deno.execPath(), {
    args: ["bundle", "--quiet", "--output", output, MAIN],
    cwd: ROOT,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!bundled.success) {
    throw new Error(`deno bundle failed: ${new TextDecoder().decode(bundled.stderr)}`);
  }
}

interface Shipped {
  /** The directory holding the bundle (0755), removed when this process exits. */
  dir: string;
  /** The bundle (0644). */
  bundle: string;
}

let shipped: Promise<Shipped> | undefined;

async function buildShipped(): Promise<Shipped> {
  const dir = await Deno.makeTempDir({ prefix: "keelson-shipped-" });
  globalThis.addEventListener("unload", () => {
    try {
      Deno.removeSync(dir, { recursive: true });
    } catch { /* gone */ }
  });
  // readable by the test user: makeTempDir makes 0700
  await Deno.chmod(dir, 0o755);
  const bundle = `${dir}/keelson.js`;
  await buildBundle(bundle);
  await Deno.chmod(bundle, 0o644);
  return { dir, bundle };
}

/**
 * The bundle every test of this process runs, built on first use and removed when the process
 * exits; readable by every user.
 * @returns its path
 * @throws {Error} when bundling fails
 */
export async function shippedBundle(): Promise<string> {
  shipped ??= buildShipped();
  try {
    return (await shipped).bundle;
  } catch (error) {
    shipped = undefined;
    throw error;
  }
}

/** The unprivileged test user. */
export interface TestUser {
  name: string;
  uid: number;
  gid: number;
}

let user: Promise<TestUser> | undefined;

async function idOf(name: string): Promise<TestUser | undefined> {
  const id = async (flag: string) => {
    const out = await new Deno.Command("id", {
      args: [flag, name],
      stdout: "piped",
      stderr: "null",
    })
      .output();
    return out.success ? Number(new TextDecoder().decode(out.stdout).trim()) : undefined;
  };
  const uid = await id("-u");
  const gid = await id("-g");
  return uid === undefined || gid === undefined ? undefined : { name, uid, gid };
}

async function ensureTestUser(): Promise<TestUser> {
  const existing = await idOf(TEST_USER);
  if (existing) return existing;
  if (Deno.uid() !== 0) {
    throw new Error(`User ${TEST_USER} does not exist and only root can create it`);
  }
  const out = await new Deno.Command("useradd", {
    args: [
      "--system",
      "--user-group",
      "--no-create-home",
      "--home-dir",
      "/nonexistent",
      "--shell",
      "/usr/sbin/nologin",
      TEST_USER,
    ],
    stdout: "null",
    stderr: "piped",
  }).output();
  const created = await idOf(TEST_USER);
  if (!created) {
    throw new Error(
      `useradd ${TEST_USER} failed (exit ${out.code}): ${new TextDecoder().decode(out.stderr)}`,
    );
  }
  return created;
}

/**
 * The unprivileged user (`keelson-test`), created with useradd when absent (needs root).
 * @returns its name, uid and gid
 * @throws {Error} when it does not exist and cannot be created
 */
export function testUser(): Promise<TestUser> {
  user ??= ensureTestUser().catch((error) => {
    user = undefined;
    throw error;
  });
  return user;
}

let userHome: Promise<string> | undefined;

/** A home and DENO_DIR the test user owns (deno writes its caches there even for a bundle). */
function testUserHome(): Promise<string> {
  userHome ??= (async () => {
    const { dir } = await (shipped ??= buildShipped());
    const { uid, gid } = await testUser();
    const home = `${dir}/home`;
    await Deno.mkdir(`${home}/deno`, { recursive: true });
    await Deno.chown(home, uid, gid);
    await Deno.chown(`${home}/deno`, uid, gid);
    return home;
  })().catch((error) => {
    userHome = undefined;
    throw error;
  });
  return userHome;
}

/** What runs Keelson: by default the shipped bundle with the baked flags, as root's child. */
export interface KeelsonCommandOptions {
  /**
   * As the unprivileged test user with no capability (needs root), as
   * deploy/systemd/keelson.service runs it, and with a service's environment: PATH, plus HOME and
   * DENO_DIR for `deno run` (nothing of the test's, such as NODE_EXTRA_CA_CERTS); for `run`, with
   * the root step beside it (`service_manager.ts`). @default false
   */
  unprivileged?: boolean;
  /**
   * Permission flags instead of the baked ones, for a test that must differ (it says why).
   * @default compilePermissions()
   */
  permissions?: string[];
  /** `deno run` flags besides permissions. @default compiledRuntimeFlags() */
  runtimeFlags?: string[];
  /** Another bundle to run (a benchmark's warmed copy). @default shippedBundle() */
  entry?: string;
  /** Runs main.ts from source with deno.json instead of a bundle (benchmarks compare). */
  source?: boolean;
}

/**
 * The argv that runs Keelson with `args`, executable first.
 * @param args Keelson's own arguments, e.g. `["run", "--config", path]`
 * @param options who runs what, and with which flags
 * @returns e.g. `["setpriv", ..., "--", "env", "-i", "PATH=...", ..., "/usr/bin/deno", "run", ...]`
 */
export async function keelsonCommand(
  args: readonly string[],
  options: KeelsonCommandOptions = {},
): Promise<string[]> {
  const program = options.source ? [MAIN] : ["--no-config", options.entry ?? await shippedBundle()];
  // the binary: what `keelson` is on a host, before its own arguments
  const binary = [
    Deno.execPath(),
    "run",
    // the compiled binary never prompts: a missing permission is an error
    "--no-prompt",
    ...(options.permissions ?? await compilePermissions()),
    ...(options.runtimeFlags ?? compiledRuntimeFlags()),
    ...program,
  ];
  const deno = [...binary, ...args];
  if (!options.unprivileged) return deno;
  const { name } = await testUser();
  const home = await testUserHome();
  return [
    // systemd's part: keelson.service's agent and, as root, keelson-apply.service's root step
    Deno.execPath(),
    "run",
    "--no-config",
    "--no-prompt",
    "--allow-all",
    SERVICE_MANAGER,
    JSON.stringify(binary),
    name,
    "--",
    "setpriv",
    // a SIGKILL of the manager (a test's crash) must reach the agent, as systemd kills the unit
    "--pdeathsig=KILL",
    `--reuid=${name}`,
    `--regid=${name}`,
    "--init-groups",
    "--no-new-privs",
    // no capability, as keelson.service's empty CapabilityBoundingSet
    "--bounding-set=-all",
    "--inh-caps=-all",
    "--ambient-caps=-all",
    "--",
    "env",
    "-i",
    `PATH=${SERVICE_PATH}`,
    `HOME=${home}`,
    `DENO_DIR=${home}/deno`,
    ...deno,
  ];
}

/**
 * The agent's pid under the service manager of an `unprivileged` command: the manager's child
 * running as the test user (the root step beside it runs as root). The manager is a Deno process
 * of its own, so a figure read from its pid would be the manager's, not Keelson's.
 * @param managerPid the pid of the process `keelsonCommand(..., { unprivileged: true })` started
 * @returns the agent's pid, or undefined while it has not dropped to the test user (or is gone)
 */
export async function agentPidUnder(managerPid: number): Promise<number | undefined> {
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    let status: string;
    try {
      status = await Deno.readTextFile(`/proc/${entry.name}/status`);
    } catch {
      continue; // gone since the listing
    }
    const ppid = Number(/^PPid:\s+(\d+)/m.exec(status)?.[1]);
    const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]);
    const name = /^Name:\s+(\S+)/m.exec(status)?.[1];
    if (ppid === managerPid && uid !== 0 && name === "deno") return Number(entry.name);
  }
  return undefined;
}

/**
 * Quotes an argv for `sh -c` (tests that start Keelson inside `ip netns exec` with redirections).
 * @param argv the words
 * @returns one line of shell
 */
export function shellCommand(argv: readonly string[]): string {
  return argv.map((word) =>
    /^[A-Za-z0-9_\/.,:=@%+-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`
  ).join(" ");
}

/** The `--allow-write` paths baked into the binary. */
async function bakedWritePaths(): Promise<string[]> {
  const flag = (await compilePermissions()).find((f) => f.startsWith("--allow-write"));
  if (flag === undefined) return [];
  if (flag === "--allow-write") return ["/"];
  return flag.slice("--allow-write=".length).split(",");
}

/**
 * Directories for one Keelson's files, under the baked write paths: the daemons' files root's (the
 * root step installs them), the track files and staging directory the test user's.
 */
export interface ShippedDirs extends AsyncDisposable {
  /** Under /etc/keepalived/conf.d: for `[keepalived] config_file`. */
  readonly keepalived: string;
  /** Under /run/keelson: `track_file_dir` (track files and the staging directory). */
  readonly track: string;
  /**
   * `<track>-daemons` (`src/config/daemon_dir.ts`): root's, group of the test user, setgid 2750,
   * as keelson.tmpfiles makes /run/keelson-daemons: keepalived's notify FIFO and the root step's
   * read-only BIRD socket.
   */
  readonly daemons: string;
  /** Under /etc/keelson/bird: for `[bgp] config_file`. */
  readonly bird: string;
  /** Under /run/bird: for BIRD's control socket (`[bgp] socket`). */
  readonly birdSocket: string;
}

/** The directories the root step writes and the agent only reads. */
const ROOT_OWNED = new Set(["keepalived", "bird"]);

/** Directories this process created above its scratch directories, removed once empty. */
const createdParents = new Set<string>();
const liveScratch = new Set<string>();
let scratchCleanup = false;

/** `mkdir -p` that remembers what it created. */
async function makeParents(path: string): Promise<void> {
  const parts = path.split("/").filter((p) => p !== "");
  let current = "";
  for (const part of parts) {
    current += `/${part}`;
    try {
      await Deno.mkdir(current, { mode: 0o755 });
      await Deno.chmod(current, 0o755);
      createdParents.add(current);
    } catch (error) {
      if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
    }
  }
  const mode = (await Deno.stat(path)).mode ?? 0;
  if ((mode & 0o001) === 0) {
    throw new Error(
      `${path} exists but is not traversable by other users (mode ${
        (mode & 0o777).toString(8)
      }), ` +
        `so ${TEST_USER} cannot reach its files: give it o+x or remove it`,
    );
  }
}

function removeScratchSync(): void {
  for (const dir of liveScratch) {
    try {
      Deno.removeSync(dir, { recursive: true });
    } catch { /* gone */ }
  }
  liveScratch.clear();
  removeEmptyParentsSync();
}

function removeEmptyParentsSync(): void {
  // deepest first; a directory still holding something (another scratch, a package's file) stays
  for (const dir of [...createdParents].sort((a, b) => b.length - a.length)) {
    try {
      Deno.removeSync(dir);
      createdParents.delete(dir);
    } catch { /* not empty, or gone */ }
  }
}

/**
 * Makes one Keelson's directories under the write paths baked into the binary (needs root):
 * `<base>/keelson-test.<pid>.<random>`, mode 0755: the track and BIRD socket directories owned by
 * the test user (as keelson.tmpfiles gives /run/keelson to `keelson`), keepalived's and BIRD's
 * file directories by root (the root step installs there), and the track directory's `-daemons`
 * sibling root's with the test user's group (mode 2750). Removed on dispose (or when this process exits), with any
 * base directory this process created once it is empty.
 * @returns the four directories
 * @throws {Error} when not root, or when a base is no longer in compile_permissions.txt
 */
export async function shippedDirs(): Promise<ShippedDirs> {
  const baked = await bakedWritePaths();
  const { uid, gid } = await testUser();
  if (!scratchCleanup) {
    globalThis.addEventListener("unload", removeScratchSync);
    scratchCleanup = true;
  }
  const made: string[] = [];
  const dirs: Record<string, string> = {};
  try {
    for (const [purpose, base] of Object.entries(WRITE_DIRS)) {
      if (!baked.some((p) => p === "/" || base === p || base.startsWith(`${p}/`))) {
        throw new Error(
          `scripts/compile_permissions.txt no longer allows writing to ${base} (${purpose}): ` +
            `move the harness's ${purpose} directory into the baked --allow-write set`,
        );
      }
      await makeParents(base);
      const dir = await Deno.makeTempDir({ dir: base, prefix: `keelson-test.${Deno.pid}.` });
      made.push(dir);
      liveScratch.add(dir);
      await Deno.chmod(dir, 0o755);
      // the files the daemons read are root's, installed by the root step (keelson.tmpfiles):
      // the agent owns only its track files, FIFO and staging directory, and BIRD's socket's
      if (!ROOT_OWNED.has(purpose)) await Deno.chown(dir, uid, gid);
      else if (purpose === "bird") {
        // as keelson-bgp.tmpfiles makes /etc/keelson/bird root:bird setgid: the installed file
        // (0640) gets the group the lab's BIRD runs with (the test user's), which the agent reads
        await Deno.chown(dir, 0, gid);
        await Deno.chmod(dir, 0o2755);
      }
      dirs[purpose] = dir;
      if (purpose === "track") {
        const daemons = daemonsDir(dir);
        await Deno.mkdir(daemons);
        made.push(daemons);
        liveScratch.add(daemons);
        await Deno.chown(daemons, 0, gid);
        await Deno.chmod(daemons, 0o2750);
        dirs.daemons = daemons;
      }
    }
  } catch (error) {
    for (const dir of made) {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      liveScratch.delete(dir);
    }
    removeEmptyParentsSync();
    throw error;
  }
  return {
    keepalived: dirs.keepalived!,
    track: dirs.track!,
    daemons: dirs.daemons!,
    bird: dirs.bird!,
    birdSocket: dirs.birdSocket!,
    async [Symbol.asyncDispose]() {
      for (const dir of made) {
        await Deno.remove(dir, { recursive: true }).catch(() => {});
        liveScratch.delete(dir);
      }
      removeEmptyParentsSync();
    },
  };
}

/**
 * Lets the test user read files the tests wrote as root (inventory, kubeconfig, certificates):
 * each file becomes group `keelson-test`, mode 0640, as an operator installs them for `keelson`,
 * and every directory above it that others cannot traverse gets o+x (Deno.makeTempDir makes
 * 0700), up to the first that can. Only for the tests' own files: a directory outside the temp
 * directory is never changed.
 * @param paths the files
 * @throws {Error} when a directory that would need changing is outside the temp directory
 */
export async function readableByTestUser(...paths: string[]): Promise<void> {
  const { gid } = await testUser();
  const tmp = (Deno.env.get("TMPDIR") ?? "/tmp").replace(/\/+$/, "");
  for (const path of paths) {
    await Deno.chown(path, null, gid);
    await Deno.chmod(path, 0o640);
    let dir = path.slice(0, path.lastIndexOf("/"));
    while (dir !== "") {
      const mode = (await Deno.stat(dir)).mode ?? 0;
      if ((mode & 0o001) !== 0) {
        dir = dir.slice(0, dir.lastIndexOf("/"));
        continue;
      }
      if (!dir.startsWith(`${tmp}/`)) {
        throw new Error(`${path}: ${dir} is not traversable by ${TEST_USER}, and not a test's`);
      }
      await Deno.chmod(dir, (mode & 0o7777) | 0o001);
      dir = dir.slice(0, dir.lastIndexOf("/"));
    }
  }
}
