/**
 * A scratch host for install tests: a root directory that commands run in through chroot(2),
 * inside a private mount namespace (`unshare --mount`) that ends with each command, so nothing is
 * mounted on the real host. /usr is the host's under a scratch overlay (its programs: systemd's
 * tools, coreutils, dpkg, keepalived's and BIRD's units; what a package or an install step writes
 * there lands in the scratch host's upper layer, never in the host's /usr); /dev and /proc are the
 * host's; /etc, /usr/local, /run, /var, /tmp and /root are the scratch host's own. /etc starts
 * with copies of the host's account, PAM and loader files, as a freshly installed machine has
 * them, and /var/lib/dpkg is an empty package database.
 *
 * Needs root.
 *
 * @module
 */

/** What a command in the scratch host printed (stdout and stderr, interleaved) and its exit code. */
export interface ScratchOutput {
  code: number;
  output: string;
}

/** Options of `ScratchHost.create`. */
export interface ScratchHostOptions {
  /** Files to mount read-only at a path inside the root: `[host path, path in the root]`. */
  binds?: Array<[string, string]>;
}

/** The environment every command gets: systemd's default PATH, and systemctl offline. */
const BASE_ENV: Record<string, string> = {
  PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
  HOME: "/root",
  LANG: "C.UTF-8",
  NO_COLOR: "1",
  // systemctl: no PID 1 to talk to; enable writes links, daemon-reload/start/restart are skipped
  SYSTEMD_OFFLINE: "1",
  SYSTEMD_LOG_COLOR: "0",
  SYSTEMD_PAGER: "",
};

/** Files of the host's /etc a new machine has too: accounts, PAM (runuser), the loader's cache. */
const ETC_SEED = [
  "passwd",
  "group",
  "shadow",
  "gshadow",
  "login.defs",
  "nsswitch.conf",
  "ld.so.cache",
  "ld.so.conf",
  "ld.so.conf.d",
  "pam.conf",
  "pam.d",
  "security",
  "shells",
  "alternatives",
  "default",
  "bird",
];

async function exists(path: string): Promise<boolean> {
  return await Deno.lstat(path).then(() => true, () => false);
}

async function command(name: string, args: string[]): Promise<void> {
  const out = await new Deno.Command(name, { args, stdout: "piped", stderr: "piped" }).output();
  if (!out.success) {
    throw new Error(`${name} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr).trim()}`);
  }
}

/** A scratch root; `[Symbol.asyncDispose]` removes it (after checking nothing is mounted there). */
export class ScratchHost implements AsyncDisposable {
  /** The directory holding the root and the scratch /usr/local. */
  readonly base: string;
  /** The root directory: `/` of every command run here. */
  readonly root: string;
  readonly #usrLocal: string;
  /** The overlay's upper layer: what was written to /usr (but /usr/local) in the host. */
  readonly #usrUpper: string;
  readonly #binds: Array<[string, string]>;
  /** Top-level directories that are directories (not /usr symlinks) on this host. */
  readonly #hostLibDirs: string[];

  private constructor(base: string, binds: Array<[string, string]>, hostLibDirs: string[]) {
    this.base = base;
    this.root = `${base}/root`;
    this.#usrLocal = `${base}/usr-local`;
    this.#usrUpper = `${base}/usr-upper`;
    this.#binds = binds;
    this.#hostLibDirs = hostLibDirs;
  }

  /**
   * Makes a scratch host.
   * @param options files to mount into it
   * @returns the host
   */
  static async create(options: ScratchHostOptions = {}): Promise<ScratchHost> {
    const base = await Deno.makeTempDir({ prefix: "keelson-scratch-host-" });
    const hostLibDirs: string[] = [];
    const host = new ScratchHost(base, options.binds ?? [], hostLibDirs);
    const root = host.root;
    await Deno.mkdir(root, { mode: 0o755 });
    await Deno.chmod(root, 0o755); // not the umask's
    // what a systemd host has before anything is installed
    for (const dir of ["etc/systemd/system", "usr", "proc", "dev", "run", "var/lib", "root"]) {
      await Deno.mkdir(`${root}/${dir}`, { recursive: true });
    }
    for (const dir of ["usr-upper", "usr-work"]) await Deno.mkdir(`${base}/${dir}`);
    // an empty package database, as on a machine before its first package
    for (const dir of ["info", "updates", "triggers"]) {
      await Deno.mkdir(`${root}/var/lib/dpkg/${dir}`, { recursive: true });
    }
    for (const file of ["status", "available"]) {
      await Deno.writeTextFile(`${root}/var/lib/dpkg/${file}`, "");
    }
    await Deno.mkdir(`${root}/var/log`, { recursive: true });
    for (const dir of ["tmp", "var/tmp"]) {
      await Deno.mkdir(`${root}/${dir}`, { recursive: true });
      await Deno.chmod(`${root}/${dir}`, 0o1777);
    }
    await Deno.chmod(`${root}/root`, 0o700);
    for (const dir of ["bin", "sbin", "lib"]) {
      await Deno.mkdir(`${host.#usrLocal}/${dir}`, { recursive: true });
    }
    // merged /usr: /bin -> usr/bin; elsewhere the host's directory is mounted
    for (const name of ["bin", "sbin", "lib", "lib32", "lib64", "libx32"]) {
      const info = await Deno.lstat(`/${name}`).catch(() => undefined);
      if (info?.isSymlink) {
        await Deno.symlink(await Deno.readLink(`/${name}`), `${root}/${name}`);
      } else if (info?.isDirectory) {
        await Deno.mkdir(`${root}/${name}`);
        hostLibDirs.push(name);
      }
    }
    const seed: string[] = [];
    for (const name of ETC_SEED) {
      if (await exists(`/etc/${name}`)) seed.push(`/etc/${name}`);
    }
    await command("cp", ["-a", ...seed, `${root}/etc/`]);
    for (const [, inside] of host.#binds) {
      const target = `${root}${inside}`;
      await Deno.mkdir(target.slice(0, target.lastIndexOf("/")), { recursive: true });
      await Deno.writeFile(target, new Uint8Array(), { mode: 0o755 });
    }
    return host;
  }

  /**
   * Runs a bash script as root in the scratch host (`bash -xeuo pipefail`: each command is
   * echoed, and the first that fails ends it).
   * @param script the commands
   * @param options the directory to run in (inside the root) and more environment
   * @returns the exit code and everything printed
   */
  async run(
    script: string,
    options: { cwd?: string; env?: Record<string, string> } = {},
  ): Promise<ScratchOutput> {
    const stepFile = `${this.root}/tmp/.scratch-step.sh`;
    await Deno.writeTextFile(stepFile, `cd ${options.cwd ?? "/"}\n${script}\n`);
    const mounts = [
      "set -eu",
      "exec 2>&1",
      'R="$SCRATCH_ROOT"',
      'mount -t overlay overlay -o "lowerdir=/usr,upperdir=$SCRATCH_BASE/usr-upper,' +
      'workdir=$SCRATCH_BASE/usr-work" "$R/usr"',
      'mount --bind "$SCRATCH_USR_LOCAL" "$R/usr/local"',
      'mount --rbind /dev "$R/dev"',
      'mount --rbind /proc "$R/proc"',
      ...this.#hostLibDirs.map((name) => `mount --bind /${name} "$R/${name}"`),
      ...this.#binds.map(([outside, inside]) =>
        `mount --bind ${quote(outside)} "$R"${quote(inside)} && ` +
        `mount -o remount,bind,ro "$R"${quote(inside)}`
      ),
      "unset SCRATCH_ROOT SCRATCH_USR_LOCAL SCRATCH_BASE",
      'exec chroot "$R" /bin/bash -xeuo pipefail /tmp/.scratch-step.sh',
    ].join("\n");
    const out = await new Deno.Command("unshare", {
      args: ["--mount", "--propagation", "private", "/bin/bash", "-c", mounts],
      clearEnv: true,
      env: {
        ...BASE_ENV,
        ...options.env,
        SCRATCH_ROOT: this.root,
        SCRATCH_USR_LOCAL: this.#usrLocal,
        SCRATCH_BASE: this.base,
      },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
    return { code: out.code, output: (decode(out.stdout) + decode(out.stderr)).trim() };
  }

  /**
   * A path inside the scratch host, as seen from the real one. Under /usr (but /usr/local) only
   * what was written in the scratch host is there: the host's own files are not.
   * @param path an absolute path inside the root
   * @returns the path on the real host
   */
  path(path: string): string {
    if (path.startsWith("/usr/local/")) {
      return `${this.#usrLocal}${path.slice("/usr/local".length)}`;
    }
    if (path.startsWith("/usr/")) return `${this.#usrUpper}${path.slice("/usr".length)}`;
    return `${this.root}${path}`;
  }

  /**
   * The numeric id of a user or group of the scratch host.
   * @param file "passwd" or "group"
   * @param name the name
   * @returns the id, or undefined when the file has no such entry
   */
  async idOf(file: "passwd" | "group", name: string): Promise<number | undefined> {
    const text = await Deno.readTextFile(`${this.root}/etc/${file}`);
    const line = text.split("\n").find((l) => l.startsWith(`${name}:`));
    return line === undefined ? undefined : Number(line.split(":")[2]);
  }

  /** Removes the scratch host, unless something is still mounted below it. */
  async [Symbol.asyncDispose](): Promise<void> {
    const mounts = await Deno.readTextFile("/proc/self/mounts");
    // every mount was private to a namespace that ended; one left here would take /usr with it
    if (mounts.includes(this.base)) {
      throw new Error(`Not removing ${this.base}: something is mounted below it`);
    }
    await Deno.remove(this.base, { recursive: true });
  }
}

/** A shell word in single quotes. */
export function quote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}
