/**
 * `keelson run` loads only what it runs. The dispatcher (main.ts → src/cli/dispatch.ts) reaches
 * each command through a dynamic `import()`, so no command module is evaluated before its name is
 * given; and from src/cli/run.ts no static, value-carrying import reaches the importer, the
 * planner, the `status` and `render` commands or the Kubernetes client library (used for its
 * types only). Every module in that graph is parsed and evaluated when the agent starts and stays
 * in its memory for weeks; `deno bundle` keeps dynamically imported modules in the one file but
 * evaluates them only when the `import()` runs.
 *
 * Type-only imports are left out (they are erased), dynamic imports are not followed (they load on
 * demand), and an import whose every name is marked `type` counts as type-only.
 */
import assert from "node:assert/strict";
import { dirname, join, normalize, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = normalize(join(dirname(fileURLToPath(import.meta.url)), "../../.."));

/** The command modules the dispatcher loads on demand. */
const COMMAND_MODULES = [
  "src/cli/run.ts",
  "src/cli/check.ts",
  "src/cli/plan.ts",
  "src/cli/import.ts",
  "src/cli/render.ts",
  "src/cli/status.ts",
  "src/cli/version.ts",
];

/** What `run` never calls, as path prefixes (folders end in "/") or package names. */
const NOT_FOR_RUN = [
  "src/import/",
  "src/plan/",
  "src/status/format_status.ts",
  "src/status/cluster_status.ts",
  "src/status/decide_problems.ts",
  "src/cli/check.ts",
  "src/cli/plan.ts",
  "src/cli/plan_difference.ts",
  "src/cli/import.ts",
  "src/cli/render.ts",
  "src/cli/render_bird.ts",
  "src/cli/print_host_file.ts",
  "src/cli/offline_provider.ts",
  "src/cli/status.ts",
  "npm:@kubernetes/client-node",
];

/**
 * The specifiers a module loads when it is evaluated: static imports and re-exports that carry a
 * value, and side-effect imports. Type-only ones and dynamic `import()` are left out.
 * @param text the module's source
 * @returns the specifiers as written
 */
export function evaluatedImports(text: string): string[] {
  const found: string[] = [];
  const fromClause =
    /^(import|export)\s+(type\s+)?((?:[\w$]+\s*,\s*)?(?:\{[^}]*\}|\*(?:\s+as\s+[\w$]+)?|[\w$]+))\s*from\s*["']([^"']+)["']/gm;
  for (const m of text.matchAll(fromClause)) {
    if (m[2] !== undefined) continue;
    const clause = m[3]!;
    const braces = clause.match(/^\{([^}]*)\}$/);
    const names = braces?.[1]?.split(",").map((n) => n.trim()).filter((n) => n !== "");
    if (names !== undefined && names.length > 0 && names.every((n) => n.startsWith("type "))) {
      continue;
    }
    found.push(m[4]!);
  }
  for (const m of text.matchAll(/^import\s*["']([^"']+)["']/gm)) found.push(m[1]!);
  return found;
}

/** The import map of deno.json: bare specifier → target. */
async function importMap(): Promise<Record<string, string>> {
  const config = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json")));
  return config.imports as Record<string, string>;
}

/**
 * A specifier as a node of the graph: a repository-relative path for a relative import,
 * `npm:<package>` for a package, undefined for Node's built-ins.
 */
function node(
  from: string,
  specifier: string,
  imports: Record<string, string>,
): string | undefined {
  if (specifier.startsWith(".")) return relative(ROOT, join(ROOT, dirname(from), specifier));
  if (specifier.startsWith("node:")) return undefined;
  const bare = specifier.startsWith("npm:") ? specifier.slice(4) : specifier;
  const parts = bare.split("/");
  const name = bare.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
  const mapped = imports[name] ?? imports[`${name}/`];
  if (mapped !== undefined && !mapped.startsWith("npm:")) {
    return relative(ROOT, join(ROOT, mapped));
  }
  return `npm:${name.replace(/@[^@/]*$/, "")}`;
}

/**
 * Every module evaluated when `entry` is, by walking the static value imports of the repository's
 * files (packages are leaves).
 * @returns repository-relative paths and `npm:<package>` names, each with the file that imports it
 */
async function evaluatedGraph(entry: string): Promise<Map<string, string>> {
  const imports = await importMap();
  const reached = new Map<string, string>([[entry, "(entry)"]]);
  const queue = [entry];
  while (queue.length > 0) {
    const file = queue.shift()!;
    if (file.startsWith("npm:")) continue;
    const text = await Deno.readTextFile(join(ROOT, file));
    for (const specifier of evaluatedImports(text)) {
      const next = node(file, specifier, imports);
      if (next === undefined || reached.has(next)) continue;
      reached.set(next, file);
      queue.push(next);
    }
  }
  return reached;
}

/** The reached modules that match one of the prefixes, each as "module (imported by file)". */
function offending(graph: Map<string, string>, prefixes: string[]): string[] {
  return [...graph].filter(([module]) => prefixes.some((p) => module.startsWith(p)))
    .map(([module, by]) => `${module} (imported by ${by})`);
}

Deno.test("evaluatedImports keeps value imports and drops type-only and dynamic ones", () => {
  const text = [
    'import { a, type B } from "./a.ts";',
    'import type { C } from "./c.ts";',
    'import { type D, type E } from "./d.ts";',
    'import * as f from "./f.ts";',
    'import g, { h } from "./g.ts";',
    'export { i } from "./i.ts";',
    'export type { J } from "./j.ts";',
    'import "./side_effect.ts";',
    'const k = await import("./k.ts");',
    "import {",
    "  l,",
    "  type M,",
    '} from "./l.ts";',
  ].join("\n");
  assert.deepEqual(evaluatedImports(text), [
    "./a.ts",
    "./f.ts",
    "./g.ts",
    "./i.ts",
    "./l.ts",
    "./side_effect.ts",
  ]);
});

Deno.test("the dispatcher loads every command on demand: main.ts reaches none statically", async () => {
  const graph = await evaluatedGraph("main.ts");
  assert.ok(graph.has("src/cli/dispatch.ts"), "the walk did not reach src/cli/dispatch.ts");
  assert.deepEqual(offending(graph, COMMAND_MODULES), []);
});

Deno.test("run's static graph holds no importer, planner, status, render or Kubernetes client", async () => {
  const graph = await evaluatedGraph("src/cli/run.ts");
  // the walk itself works: run reaches the agent, the provider and the libraries it does use
  for (const module of ["src/agent/agent.ts", "providers/baremetal/mod.ts", "npm:zod"]) {
    assert.ok(graph.has(module), `the walk from src/cli/run.ts did not reach ${module}`);
  }
  assert.deepEqual(offending(graph, NOT_FOR_RUN), []);
});

Deno.test("zod is imported as a namespace of zod/v4, so the bundle leaves out its locales", async () => {
  // `import { z } from "zod"` hands over zod's whole namespace object, so `deno bundle` keeps
  // every export: ~40 locales and the JSON Schema converters, 600 KB the agent parses at start
  // and ~5 MB of resident memory. `import * as z from "zod/v4"` lets it keep only what is used.
  const graph = await evaluatedGraph("src/cli/run.ts");
  const offenders: string[] = [];
  for (const file of graph.keys()) {
    if (file.startsWith("npm:")) continue;
    const text = await Deno.readTextFile(join(ROOT, file));
    const zodImports = [
      ...text.matchAll(/^import\s+(?!type\s)([^;]*?)\s*from\s*["']zod([^"']*)["']/gm),
    ];
    for (const [, clause, subpath] of zodImports) {
      if (!(/^\*\s+as\s+z$/.test(clause!.trim()) && subpath === "/v4")) offenders.push(file);
    }
  }
  assert.ok(graph.has("src/config/schema.ts"), "the walk did not reach src/config/schema.ts");
  assert.deepEqual(offenders, []);
});

Deno.test("prom-client's index is never evaluated: the bare name maps to src/metrics/prom_client.ts, which loads single class files", async () => {
  // the index loads the push gateway (node:http, node:https, node:zlib), the cluster aggregator
  // and every default metric, one of them the OpenTelemetry API: ~1.5 MB of RSS at start
  const imports = await importMap();
  assert.equal(imports["prom-client"], "./src/metrics/prom_client.ts");
  const shim = await Deno.readTextFile(join(ROOT, "src/metrics/prom_client.ts"));
  const loaded = evaluatedImports(shim);
  assert.ok(loaded.length > 0, "the shim loads nothing");
  assert.deepEqual(loaded.filter((s) => !/^prom-client\/lib\/[a-z]+\.js$/.test(s)), []);
});
