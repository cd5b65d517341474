/**
 * The arrows point one way (DESIGN.md, ARCHITECTURE.md): controllers -> cloud contract <-
 * providers; controllers -> kube; kube, config, net, log and metrics below them; only the
 * composition root (src/agent) and the offline commands (src/cli, src/plan) know a provider, and
 * only through its registry entry (`providers/<name>/mod.ts`). This test reads the import graph
 * of every .ts file under src/ and providers/ and fails on any import against that direction.
 */
import assert from "node:assert/strict";
import { dirname, join, normalize, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = normalize(join(dirname(fileURLToPath(import.meta.url)), "../../.."));

/** Layers no file of the key layer may import. */
const FORBIDDEN: Record<string, readonly string[]> = {
  "src/controllers": ["providers", "src/agent", "src/cli", "src/plan", "src/server"],
  "providers": ["src/controllers", "src/agent", "src/cli", "src/plan", "src/server"],
  "src/cloud": ["src/controllers", "providers", "src/agent", "src/cli", "src/plan", "src/server"],
  "src/server": ["src/controllers", "src/cloud", "providers", "src/agent", "src/cli", "src/plan"],
  ...Object.fromEntries(
    [
      "src/kube",
      "src/config",
      "src/net",
      "src/log",
      "src/metrics",
      "src/snapshot",
      "src/status",
      "src/text",
    ]
      .map((
        low,
      ) => [low, [
        "src/controllers",
        "src/cloud",
        "providers",
        "src/agent",
        "src/cli",
        "src/plan",
        "src/server",
      ]]),
  ),
  "src/agent": ["src/cli", "src/plan"],
  "src/plan": ["src/agent", "src/cli"],
};

/**
 * Layers allowed to import a provider, and only its registry entry or the list of built-in
 * providers (`providers/mod.ts`).
 */
const PROVIDER_USERS: readonly string[] = ["src/agent", "src/cli", "src/plan"];
const PROVIDER_ENTRY = /^providers\/(?:[^/]+\/)?mod\.ts$/;

/**
 * The module specifiers a TypeScript file imports or re-exports: static `import … from`,
 * side-effect `import "…"`, `export … from`, and `import("…")` (also in type positions).
 * Statements start at a line's beginning (deno fmt), so JSDoc examples (` * import …`) are not
 * read as imports.
 */
function importSpecifiers(text: string): string[] {
  const patterns = [
    /^import\s+(?:type\s+)?(?:[\w$]+\s*,?\s*)?(?:\*\s+as\s+[\w$]+|\{[^}]*\})?\s*from\s*["']([^"']+)["']/gm,
    /^import\s*["']([^"']+)["']/gm,
    /^export\s+(?:type\s+)?(?:\*(?:\s+as\s+[\w$]+)?|\{[^}]*\})\s*from\s*["']([^"']+)["']/gm,
    /\bimport\(\s*["']([^"']+)["']\s*\)/g,
  ];
  return patterns.flatMap((p) => [...text.matchAll(p)].map((m) => m[1]!));
}

/** The layer of a repository path: `providers`, `src/<folder>`, or the file itself. */
function layerOf(path: string): string {
  if (path.startsWith("providers/")) return "providers";
  const parts = path.split("/");
  return parts[0] === "src" && parts.length > 2 ? `src/${parts[1]}` : path;
}

/**
 * Why an import breaks the direction, or undefined when it is allowed.
 * @param from the importing file, relative to the repository root
 * @param to the imported file, relative to the repository root
 */
function violation(from: string, to: string): string | undefined {
  const a = layerOf(from);
  const b = layerOf(to);
  if (a === b) return undefined;
  if (FORBIDDEN[a]?.includes(b)) return `${a} may not import ${b}`;
  if (b === "providers") {
    if (!PROVIDER_USERS.includes(a)) return `${a} may not import a provider`;
    if (!PROVIDER_ENTRY.test(to)) {
      return `${a} reaches a provider only through its registry entry providers/<name>/mod.ts`;
    }
  }
  return undefined;
}

async function* typescriptFiles(dir: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) yield* typescriptFiles(path);
    else if (entry.isFile && entry.name.endsWith(".ts")) yield path;
  }
}

/** Every relative import edge of src/ and providers/, as repository-relative paths. */
async function importEdges(): Promise<{ from: string; to: string }[]> {
  const edges: { from: string; to: string }[] = [];
  for (const top of ["src", "providers"]) {
    for await (const file of typescriptFiles(join(ROOT, top))) {
      const from = relative(ROOT, file);
      for (const specifier of importSpecifiers(await Deno.readTextFile(file))) {
        if (!specifier.startsWith(".")) continue; // npm: and node: packages
        edges.push({ from, to: relative(ROOT, join(dirname(file), specifier)) });
      }
    }
  }
  return edges;
}

Deno.test("importSpecifiers() reads static, type-only, side-effect, re-export and dynamic imports, not JSDoc examples", () => {
  const text = [
    "/**",
    " * @example",
    ' * import { x } from "./example_only.ts";',
    " */",
    'import { a } from "./a.ts";',
    'import type { B } from "../b.ts";',
    "import {",
    "  c,",
    "  type D,",
    '} from "./c.ts";',
    'import * as e from "./e.ts";',
    'import f, { g } from "./f.ts";',
    'import "./side_effect.ts";',
    'export { h } from "./h.ts";',
    'export type { I } from "./i.ts";',
    'export * from "./j.ts";',
    'const k = await import("./k.ts");',
    'type L = import("./l.ts").L;',
    'import { z } from "npm:zod";',
  ].join("\n");
  assert.deepEqual(importSpecifiers(text).sort(), [
    "../b.ts",
    "./a.ts",
    "./c.ts",
    "./e.ts",
    "./f.ts",
    "./h.ts",
    "./i.ts",
    "./j.ts",
    "./k.ts",
    "./l.ts",
    "./side_effect.ts",
    "npm:zod",
  ]);
});

Deno.test("violation() allows the design's arrows and refuses the others", () => {
  const cases: [from: string, to: string, expected: string | undefined][] = [
    ["src/controllers/service/service_controller.ts", "src/cloud/provider.ts", undefined],
    ["src/controllers/node/node_controller.ts", "src/kube/work_queue.ts", undefined],
    ["providers/baremetal/load_balancer.ts", "src/cloud/provider.ts", undefined],
    ["src/agent/agent.ts", "providers/baremetal/mod.ts", undefined],
    ["src/cli/render.ts", "providers/baremetal/mod.ts", undefined],
    ["src/cli/offline_provider.ts", "providers/mod.ts", undefined],
    [
      "providers/baremetal/load_balancer.ts",
      "src/controllers/service/service_controller.ts",
      "providers may not import src/controllers",
    ],
    [
      "src/controllers/service/service_controller.ts",
      "providers/baremetal/mod.ts",
      "src/controllers may not import providers",
    ],
    ["src/kube/work_queue.ts", "src/controllers/x.ts", "src/kube may not import src/controllers"],
    ["src/config/schema.ts", "src/cloud/provider.ts", "src/config may not import src/cloud"],
    ["src/cloud/provider.ts", "src/controllers/x.ts", "src/cloud may not import src/controllers"],
    [
      "src/agent/agent.ts",
      "providers/baremetal/keepalived/announcer.ts",
      "src/agent reaches a provider only through its registry entry providers/<name>/mod.ts",
    ],
    ["src/server/serve.ts", "providers/baremetal/mod.ts", "src/server may not import providers"],
  ];
  for (const [from, to, expected] of cases) {
    assert.equal(violation(from, to), expected, `${from} -> ${to}`);
  }
});

Deno.test("src/ and providers/ import only in the design's direction", async () => {
  const edges = await importEdges();
  assert.ok(edges.length > 100, `read ${edges.length} import edges; the walk found too few`);
  const wrong = edges.flatMap(({ from, to }) => {
    const why = violation(from, to);
    return why ? [`${from} imports ${to}: ${why}`] : [];
  });
  assert.deepEqual(wrong, [], `imports against the direction:\n${wrong.join("\n")}`);
});
