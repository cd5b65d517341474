/**
 * Self-containment of the shipped program: `deno bundle` (run with the host's environment, so a
 * registry reached through a proxy with its own CA works) makes one JS file, and that file alone,
 * copied into an empty directory (no repo, no deno.json, no node_modules) with an empty
 * DENO_DIR, `--no-config` and `--cached-only` (so any module it would still have to fetch or
 * read from a cache is an error), and with exactly the permissions scripts/compile.sh bakes into
 * the binary, prints the same stdout and stderr and exits with the same code as
 * `deno run main.ts` for the same arguments.
 *
 * This is what `deno compile` wraps, so it stands in for the binary on machines that cannot
 * download denort.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { compiledRuntimeFlags, compilePermissions } from "./_harness/permissions.ts";
import { shippedBundle } from "./_harness/shipped_keelson.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const EXAMPLES = `${ROOT}deploy/examples`;

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs deno with exactly `env` (and NO_COLOR). */
async function run(args: string[], cwd: string, env: Record<string, string>): Promise<Outcome> {
  const output = await new Deno.Command(Deno.execPath(), {
    args,
    cwd,
    env: { NO_COLOR: "1", ...env },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
}

/** Directory names under `dir`, recursively, relative to it. */
async function listTree(dir: string, prefix = ""): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    names.push(`${prefix}${entry.name}`);
    if (entry.isDirectory) {
      names.push(...await listTree(`${dir}/${entry.name}`, `${prefix}${entry.name}/`));
    }
  }
  return names.sort();
}

const BROKEN_INVENTORY = `[cluster]
name = "x"
provider = "nope"

[[machines]]
name = "m1"
role = "worker"
internal_ips = ["10.0.0.300"]
`;

/** HOME and, when set, DENO_DIR: where the source run finds its npm cache. */
function hostEnv(): Record<string, string> {
  const env: Record<string, string> = { HOME: Deno.env.get("HOME") ?? "/root" };
  const denoDir = Deno.env.get("DENO_DIR");
  if (denoDir) env.DENO_DIR = denoDir;
  return env;
}

/** The host's environment without Keelson's own variables, so a run reads only its arguments. */
function hostEnvWithoutKeelson(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(Deno.env.toObject()).filter(([k]) => !k.startsWith("KEELSON_")),
  );
}

const CASES: Array<{ name: string; args: string[]; expectCode: number }> = [
  { name: "version", args: ["version"], expectCode: 0 },
  { name: "--version", args: ["--version"], expectCode: 0 },
  { name: "help", args: ["--help"], expectCode: 0 },
  { name: "unknown command", args: ["frobnicate"], expectCode: 2 },
  { name: "check on the example", args: ["check", "--config", "keelson.toml"], expectCode: 0 },
  { name: "check on a broken file", args: ["check", "--config", "broken.toml"], expectCode: 1 },
  {
    name: "plan on the example",
    args: ["plan", "--config", "keelson.toml", "--state", "cluster-state.yaml"],
    expectCode: 0,
  },
  {
    name: "plan as JSON",
    args: ["plan", "--config", "keelson.toml", "--state", "cluster-state.yaml", "-o", "json"],
    expectCode: 0,
  },
  {
    name: "render for a control-plane host",
    args: [
      "render",
      "keepalived",
      "--config",
      "keelson.toml",
      "--host",
      "cp-1",
      "--state",
      "cluster-state.yaml",
    ],
    expectCode: 0,
  },
  { name: "run --help", args: ["run", "--help"], expectCode: 0 },
];

Deno.test("deno bundle output runs alone from an empty directory exactly like main.ts", async (t) => {
  const work = await Deno.makeTempDir({ prefix: "keelson-bundle-" });
  try {
    // the bundle every test that starts Keelson runs
    const bundled = await shippedBundle();

    // Two directories with the same file names, so relative paths in the output match.
    const empty = `${work}/empty`;
    const reference = `${work}/reference`;
    const freshDenoDir = `${work}/deno_dir`;
    for (const dir of [empty, reference, freshDenoDir]) await Deno.mkdir(dir);
    await Deno.copyFile(bundled, `${empty}/keelson.js`);
    for (const dir of [empty, reference]) {
      await Deno.copyFile(`${EXAMPLES}/keelson.toml`, `${dir}/keelson.toml`);
      await Deno.copyFile(`${EXAMPLES}/cluster-state.yaml`, `${dir}/cluster-state.yaml`);
      await Deno.writeTextFile(`${dir}/broken.toml`, BROKEN_INVENTORY);
    }

    await t.step("the bundle imports nothing but node: built-ins", async () => {
      const text = await Deno.readTextFile(bundled);
      const specifiers = [...text.matchAll(/^import\s[^"'\n]*["']([^"']+)["'];?$/gm)]
        .map((m) => m[1]!);
      assert.ok(specifiers.length > 0, "expected the node: imports of the npm packages");
      assert.deepEqual(specifiers.filter((s) => !s.startsWith("node:")), []);
    });

    await t.step(
      "the bundle is ASCII, so V8 holds its source at one byte a character",
      async () => {
        // one character past U+007F, even in a comment, makes the whole source a two-byte string:
        // ~2 MB more resident memory for the agent's life; write \u escapes or ASCII instead
        const lines = (await Deno.readTextFile(bundled)).split("\n");
        const wide = lines.flatMap((line, i) =>
          /[\u0080-\uffff]/.test(line) ? [`${i + 1}: ${line}`] : []
        );
        assert.deepEqual(wide, []);
      },
    );

    const permissions = await compilePermissions();
    for (const c of CASES) {
      await t.step(`${c.name}: same stdout, stderr and exit code`, async () => {
        const alone = await run(
          [
            "run",
            "--no-config",
            "--cached-only",
            "--no-prompt",
            ...permissions,
            ...compiledRuntimeFlags(),
            "keelson.js",
            ...c.args,
          ],
          empty,
          { HOME: hostEnv().HOME!, DENO_DIR: freshDenoDir },
        );
        const fromSource = await run(
          ["run", "--allow-all", "--config", `${ROOT}deno.json`, `${ROOT}main.ts`, ...c.args],
          reference,
          { ...hostEnvWithoutKeelson(), ...hostEnv() },
        );
        assert.equal(fromSource.code, c.expectCode, fromSource.stderr);
        assert.equal(alone.stderr, fromSource.stderr);
        assert.equal(alone.stdout, fromSource.stdout);
        assert.equal(alone.code, fromSource.code);
      });
    }

    await t.step("nothing was fetched or installed for the bundle", async () => {
      assert.deepEqual(await listTree(empty), [
        "broken.toml",
        "cluster-state.yaml",
        "keelson.js",
        "keelson.toml",
      ]);
      const cached = (await listTree(freshDenoDir)).filter((n) =>
        n.startsWith("npm/") || n.startsWith("remote/") || n.startsWith("deps/")
      );
      assert.deepEqual(cached, []);
    });
  } finally {
    await Deno.remove(work, { recursive: true });
  }
});
