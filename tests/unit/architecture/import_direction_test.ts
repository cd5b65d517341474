/**
 * The arrows of ARCHITECTURE.md are the code's, exactly. This test reads the list of arrows
 * there ("The arrows") and the import graph of main.ts, src/ and providers/, and fails on an
 * import no drawn arrow allows, on a drawn arrow no import makes any more, and on a file named
 * `_…` (folder-private) imported from another folder. So the map cannot drift from the code:
 * changing the direction of the code means redrawing the map, in the same change.
 */
import assert from "node:assert/strict";
import { basename, dirname, join, normalize, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { typescriptFiles } from "../../_support/typescript_files.ts";

const ROOT = normalize(join(dirname(fileURLToPath(import.meta.url)), "../../.."));

/** Each room and the rooms it may import. */
type Arrows = ReadonlyMap<string, ReadonlySet<string>>;

/**
 * The arrows drawn in ARCHITECTURE.md: the first `text` block under "## The arrows", one
 * `room ──▶ rooms` per line, a line starting with spaces going on with the rooms of the one above.
 * @returns the arrows, rooms in the order they are listed
 * @throws {Error} when the section or the block is missing or a line is not an arrow
 */
export function parseArrows(markdown: string): Arrows {
  const section = markdown.split(/^## The arrows$/m)[1];
  const block = section?.split(/^## /m)[0]?.match(/^```text\n([\s\S]*?)^```$/m)?.[1];
  if (block === undefined) {
    throw new Error('ARCHITECTURE.md has no ```text block under "## The arrows"');
  }
  const arrows = new Map<string, Set<string>>();
  let current: Set<string> | undefined;
  for (const line of block.split("\n").filter((l) => l.trim() !== "")) {
    const arrow = line.match(/^(\S+)\s+──▶\s+(.*)$/);
    if (arrow) {
      if (arrows.has(arrow[1]!)) throw new Error(`ARCHITECTURE.md lists ${arrow[1]} twice`);
      current = new Set();
      arrows.set(arrow[1]!, current);
    } else if (!/^\s/.test(line) || current === undefined) {
      throw new Error(`ARCHITECTURE.md: not an arrow: "${line}"`);
    }
    for (const room of (arrow ? arrow[2]! : line).trim().split(/\s+/)) current!.add(room);
  }
  return arrows;
}

/**
 * The room of a repository path: `main.ts`, `src/<folder>`, a file directly in src/,
 * `providers/mod.ts` (the built-in providers), `providers/<name>/mod.ts` (a provider's registry
 * entry) or `providers/<name>/*`.
 */
export function roomOf(path: string): string {
  const parts = path.split("/");
  if (parts[0] === "providers" && parts.length >= 3) {
    return path === `providers/${parts[1]}/mod.ts`
      ? "providers/<name>/mod.ts"
      : "providers/<name>/*";
  }
  return parts[0] === "src" && parts.length > 2 ? `src/${parts[1]}` : path;
}

/**
 * Why an import is not one the map allows, or undefined when it is.
 * @param from the importing file, relative to the repository root
 * @param to the imported file, relative to the repository root
 * @param arrows the drawn arrows
 */
export function violation(from: string, to: string, arrows: Arrows): string | undefined {
  if (basename(to).startsWith("_") && dirname(to) !== dirname(from)) {
    return `${to} is private to ${dirname(to)}/ (its name starts with "_")`;
  }
  const [a, b] = [roomOf(from), roomOf(to)];
  if (a.startsWith("providers/<name>") && b.startsWith("providers/<name>")) {
    if (from.split("/")[1] !== to.split("/")[1]) return "a provider never imports another";
  }
  if (a === b) return undefined;
  return arrows.get(a)?.has(b) ? undefined : `ARCHITECTURE.md draws no arrow ${a} ──▶ ${b}`;
}

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

/** Every relative import edge of main.ts, src/ and providers/, as repository-relative paths. */
async function importEdges(): Promise<{ from: string; to: string }[]> {
  const files = [join(ROOT, "main.ts")];
  for (const top of ["src", "providers"]) {
    for await (const file of typescriptFiles(join(ROOT, top))) files.push(file);
  }
  const edges: { from: string; to: string }[] = [];
  for (const file of files) {
    const from = relative(ROOT, file);
    for (const specifier of importSpecifiers(await Deno.readTextFile(file))) {
      if (!specifier.startsWith(".")) continue; // npm: and node: packages
      edges.push({ from, to: relative(ROOT, join(dirname(file), specifier)) });
    }
  }
  return edges;
}

const drawn = parseArrows(await Deno.readTextFile(join(ROOT, "ARCHITECTURE.md")));

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

Deno.test("parseArrows() reads arrows and continuation lines, and refuses anything else", () => {
  const markdown = [
    "## The arrows",
    "",
    "```text",
    "src/cli   ──▶ src/agent  src/plan",
    "              src/kube",
    "src/agent ──▶ src/kube",
    "```",
    "",
    "## Next",
  ].join("\n");
  assert.deepEqual(
    [...parseArrows(markdown)].map(([room, to]) => [room, [...to]]),
    [["src/cli", ["src/agent", "src/plan", "src/kube"]], ["src/agent", ["src/kube"]]],
  );
  assert.throws(() => parseArrows("## The arrows\n\nno block\n"), /no ```text block/);
  assert.throws(
    () => parseArrows("## The arrows\n```text\nsrc/cli -> src/agent\n```\n"),
    /not an arrow/,
  );
});

Deno.test("violation() under the drawn arrows allows the design's imports and refuses the others", () => {
  const cases: [from: string, to: string, expected: RegExp | undefined][] = [
    ["src/controllers/service/service_controller.ts", "src/cloud/provider.ts", undefined],
    ["src/controllers/node/node_controller.ts", "src/kube/work_queue.ts", undefined],
    ["providers/baremetal/load_balancer.ts", "src/cloud/provider.ts", undefined],
    ["providers/baremetal/mod.ts", "providers/baremetal/load_balancer.ts", undefined],
    ["providers/baremetal/keepalived/model.ts", "providers/baremetal/bird/model.ts", undefined],
    ["src/agent/agent.ts", "providers/mod.ts", undefined],
    ["providers/mod.ts", "providers/baremetal/mod.ts", undefined],
    [
      "src/agent/agent.ts",
      "providers/baremetal/mod.ts",
      /no arrow src\/agent ──▶ providers\/<name>\/mod\.ts$/,
    ],
    ["src/cli/offline_provider.ts", "providers/mod.ts", undefined],
    ["src/config/pool_size.ts", "src/config/_check_pools.ts", undefined],
    ["main.ts", "src/cli/dispatch.ts", undefined],
    [
      "providers/baremetal/load_balancer.ts",
      "src/controllers/service/service_controller.ts",
      /no arrow providers\/<name>\/\* ──▶ src\/controllers$/,
    ],
    [
      "src/controllers/service/service_controller.ts",
      "providers/baremetal/mod.ts",
      /no arrow src\/controllers ──▶ providers\/<name>\/mod\.ts$/,
    ],
    ["src/kube/work_queue.ts", "src/controllers/x.ts", /no arrow src\/kube ──▶ src\/controllers/],
    ["src/config/schema.ts", "src/cloud/provider.ts", /no arrow src\/config ──▶ src\/cloud/],
    [
      "src/agent/agent.ts",
      "providers/baremetal/keepalived/announcer.ts",
      /no arrow src\/agent ──▶ providers\/<name>\/\*$/,
    ],
    ["providers/baremetal/host_side.ts", "providers/baremetal/mod.ts", /no arrow/],
    ["providers/other/x.ts", "providers/baremetal/ipam/pools.ts", /never imports another/],
    ["src/server/serve.ts", "providers/baremetal/mod.ts", /no arrow src\/server/],
    ["src/config/load_config.ts", "src/net/ip.ts", undefined],
    ["providers/baremetal/load_balancer.ts", "providers/baremetal/ipam/_choose.ts", /private/],
    ["src/cli/check.ts", "src/config/_check_pools.ts", /private to src\/config\//],
  ];
  for (const [from, to, expected] of cases) {
    const why = violation(from, to, drawn);
    if (expected === undefined) assert.equal(why, undefined, `${from} -> ${to}`);
    else assert.match(why ?? "", expected, `${from} -> ${to}`);
  }
});

Deno.test("main.ts, src/ and providers/ import exactly along ARCHITECTURE.md's arrows", async () => {
  const edges = await importEdges();
  assert.ok(edges.length > 100, `read ${edges.length} import edges; the walk found too few`);
  const wrong = edges.flatMap(({ from, to }) => {
    const why = violation(from, to, drawn);
    return why ? [`${from} imports ${to}: ${why}`] : [];
  });
  assert.deepEqual(wrong, [], `imports the map does not draw:\n${wrong.join("\n")}`);
  const used = new Set(edges.map(({ from, to }) => `${roomOf(from)} ──▶ ${roomOf(to)}`));
  const stale = [...drawn].flatMap(([a, to]) =>
    [...to].filter((b) => !used.has(`${a} ──▶ ${b}`)).map((b) => `${a} ──▶ ${b}`)
  );
  assert.deepEqual(stale, [], `ARCHITECTURE.md draws arrows no import makes:\n${stale.join("\n")}`);
});

Deno.test("ARCHITECTURE.md's arrows all point down its list: no room imports a room above it", () => {
  const order = [...drawn.keys()];
  for (const to of drawn.values()) for (const b of to) if (!order.includes(b)) order.push(b);
  const upward = [...drawn].flatMap(([a, to]) =>
    [...to].filter((b) => order.indexOf(b) <= order.indexOf(a)).map((b) => `${a} ──▶ ${b}`)
  );
  assert.deepEqual(
    upward,
    [],
    "an arrow points up the list: move the shared piece to a lower room",
  );
});

/**
 * The rooms of a graph that lie on a cycle, each cycle as its rooms in order (one per strongly
 * connected component of two or more rooms, or a room that imports itself).
 */
export function roomCycles(arrows: Arrows): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const visit = (room: string): void => {
    index.set(room, index.size);
    low.set(room, index.get(room)!);
    stack.push(room);
    for (const next of arrows.get(room) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(room, Math.min(low.get(room)!, low.get(next)!));
      } else if (stack.includes(next)) {
        low.set(room, Math.min(low.get(room)!, index.get(next)!));
      }
    }
    if (low.get(room) !== index.get(room)) return;
    const component: string[] = [];
    let top: string;
    do {
      top = stack.pop()!;
      component.unshift(top);
    } while (top !== room);
    if (component.length > 1 || arrows.get(room)?.has(room)) cycles.push(component);
  };
  for (const room of arrows.keys()) if (!index.has(room)) visit(room);
  return cycles;
}

Deno.test("roomCycles() finds loops of any length and nothing in a graph that only points down", () => {
  const graph = (pairs: [string, string][]): Arrows => {
    const arrows = new Map<string, Set<string>>();
    for (const [a, b] of pairs) arrows.set(a, (arrows.get(a) ?? new Set()).add(b));
    return arrows;
  };
  assert.deepEqual(roomCycles(graph([["a", "b"], ["b", "c"], ["a", "c"]])), []);
  assert.deepEqual(roomCycles(graph([["a", "b"], ["b", "a"]])), [["a", "b"]]);
  assert.deepEqual(roomCycles(graph([["a", "b"], ["b", "c"], ["c", "a"], ["c", "d"]])), [[
    "a",
    "b",
    "c",
  ]]);
});

Deno.test("the rooms of main.ts, src/ and providers/ import each other in no cycle", async () => {
  const arrows = new Map<string, Set<string>>();
  for (const { from, to } of await importEdges()) {
    const [a, b] = [roomOf(from), roomOf(to)];
    if (a !== b) arrows.set(a, (arrows.get(a) ?? new Set()).add(b));
  }
  assert.ok(arrows.size > 10, `read ${arrows.size} rooms; the walk found too few`);
  const cycles = roomCycles(arrows).map((c) => c.join(" ⇄ "));
  assert.deepEqual(cycles, [], "rooms that import each other: move the shared piece lower");
});

/**
 * The rooms ARCHITECTURE.md's room table names: every backquoted path of its first column.
 * @returns paths as written, e.g. `src/cli/`, `main.ts`
 */
export function tableRooms(markdown: string): string[] {
  const section = markdown.split(/^## The rooms$/m)[1]?.split(/^## /m)[0] ?? "";
  return section.split("\n").filter((l) => l.startsWith("| `"))
    .flatMap((l) => [...l.split("|")[1]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!));
}

Deno.test("ARCHITECTURE.md's room table names every room the arrows draw", async () => {
  const named = tableRooms(await Deno.readTextFile(join(ROOT, "ARCHITECTURE.md")));
  assert.ok(named.includes("src/cli/"), `read the table: ${named.join(", ")}`);
  const rooms = new Set([...drawn.keys(), ...[...drawn.values()].flatMap((to) => [...to])]);
  const missing = [...rooms].filter((room) => !room.startsWith("providers/"))
    .filter((room) => !named.includes(room) && !named.includes(`${room}/`));
  assert.deepEqual(missing, [], "rooms the table does not describe");
});
