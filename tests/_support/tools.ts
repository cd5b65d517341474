/**
 * The external programs the tests run, in one place. The unit tier runs none of them: its tests
 * use stand-ins (`sh` scripts for a check command, a fake BIRD control socket). The integration
 * tier validates rendered files with the daemons' own parsers (`bird -p`, `keepalived -t` in a
 * network namespace), and e2e runs the daemons. `.ci/run` installs every one of them, so a test
 * that needs one fails when it is missing, saying which package to install; it never returns as
 * passed without having run.
 *
 * @module
 */

/** Each external program and the Debian package that installs it. */
export const EXTERNAL_TOOLS = {
  bird: "bird2",
  keepalived: "keepalived",
  ip: "iproute2",
} as const;

/** A program the tests may need. */
export type ExternalTool = keyof typeof EXTERNAL_TOOLS;

const SEARCH_PATH = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"];

/**
 * Where a program is installed, looked up in PATH and the system directories.
 * @param name e.g. `bird`
 * @returns its path, or undefined when it is not installed
 */
export function findTool(name: ExternalTool): string | undefined {
  const dirs = [...(Deno.env.get("PATH") ?? "").split(":").filter((d) => d), ...SEARCH_PATH];
  for (const dir of dirs) {
    try {
      if (Deno.statSync(`${dir}/${name}`).isFile) return `${dir}/${name}`;
    } catch { /* not here */ }
  }
  return undefined;
}

/**
 * The path of a program this test needs; fails the test when it is not installed.
 * @param name e.g. `bird`
 * @returns its path
 * @throws {Error} `bird is not installed: apt-get install bird2 (.ci/run installs it)`
 */
export function requireTool(name: ExternalTool): string {
  const path = findTool(name);
  if (path === undefined) {
    throw new Error(
      `${name} is not installed: apt-get install ${EXTERNAL_TOOLS[name]} (.ci/run installs it)`,
    );
  }
  return path;
}

/**
 * Fails the test unless it runs as root: a network namespace (for `keepalived -t`, which
 * refuses an interface the host lacks) needs it. `.ci/run` runs as root.
 * @param why what needs root, for the message
 */
export function requireRoot(why: string): void {
  if (Deno.uid() !== 0) throw new Error(`${why} needs root (a network namespace of its own)`);
}

/**
 * Runs `bird -p -c` (parse only) on a text.
 * @param text a whole BIRD configuration
 * @returns BIRD's exit code and what it printed
 * @throws {Error} when bird is not installed
 */
export async function birdParse(text: string): Promise<{ code: number; output: string }> {
  const bird = requireTool("bird");
  const file = await Deno.makeTempFile({ suffix: ".conf" });
  try {
    await Deno.writeTextFile(file, text);
    const out = await new Deno.Command(bird, { args: ["-p", "-c", file] }).output();
    const d = new TextDecoder();
    return { code: out.code, output: d.decode(out.stderr) + d.decode(out.stdout) };
  } finally {
    await Deno.remove(file);
  }
}
