/**
 * Small things with one home each stay there: an error's text comes from `errorMessage`
 * (src/log/error_message.ts), a metric is declared through `declareOnce` (src/metrics/registry.ts),
 * addresses are compared and tested for membership by src/net/ip.ts, `ip -j addr` is read by one
 * reader (providers/baremetal/keepalived/interface_addresses.ts), and which Nodes have a ready
 * endpoint of a Service is read once (src/kube/endpoint_nodes.ts). Written out again, each
 * looks different enough that a line-based duplicate finder misses it; this guard reads the
 * program's code (src/, providers/, main.ts) for the shapes a bypass takes.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { typescriptFiles } from "../../_support/typescript_files.ts";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

/** A shape that re-implements a shared helper, and the files allowed to hold it (its home). */
interface Bypass {
  what: string;
  pattern: RegExp;
  home: readonly string[];
}

const BYPASSES: readonly Bypass[] = [
  {
    what: "an error's message cast out of `unknown` (use errorMessage)",
    pattern: /\(\s*\w+\s+as\s+Error\s*\)\.message/g,
    home: [],
  },
  {
    what: "errorMessage written out",
    pattern: /(\w+)\s+instanceof\s+Error\s*\?\s*\1\.message\s*:\s*String\(\s*\1\s*\)/g,
    home: ["src/log/error_message.ts"],
  },
  {
    what: "a metric looked up by name beside declareOnce (use declareOnce)",
    pattern: /\.getSingleMetric\(/g,
    home: ["src/metrics/registry.ts"],
  },
  {
    what: "a three-way compare written out (compareValues / compareIps / compareCodeUnits)",
    pattern: /\b([\w.]+)\s*<\s*([\w.]+)\s*\?\s*-1\s*:\s*\1\s*>\s*\2\s*\?\s*1\s*:\s*0\b/g,
    home: ["src/net/ip.ts", "src/text/code_unit_order.ts"],
  },
  {
    what: "interval membership written out (use rangeHolds)",
    pattern:
      /\b([\w.]+)\.first\s*<=\s*([\w.]+?)(?:\.value)?\s*&&\s*\2(?:\.value)?\s*<=\s*\1\.last\b|\b([\w.]+?)(?:\.value)?\s*<\s*([\w.]+)\.first\s*\|\|\s*\3(?:\.value)?\s*>\s*\4\.last\b/g,
    home: ["src/net/ip.ts"],
  },
  {
    what: "a second reader of `ip -j addr` (use readInterfaceAddresses)",
    pattern: /"-j",\s*"addr"/g,
    home: ["providers/baremetal/keepalived/interface_addresses.ts"],
  },
  {
    what: "a second reading of an endpoint's conditions (use readyEndpointNodeNames or " +
      "endpointStatesByNode)",
    pattern: /\bconditions\??\.(?:ready|serving|terminating)\b/g,
    home: ["src/kube/endpoint_nodes.ts"],
  },
];

/**
 * Where a file constructs a prom-client metric outside a `declareOnce(…)` call: a second
 * construction of one name throws, and controllers are rebuilt on every leadership.
 * @returns the 1-based line of each such construction
 */
function undeclaredMetrics(text: string): number[] {
  const calls: [number, number][] = [];
  for (let i = text.indexOf("declareOnce("); i >= 0; i = text.indexOf("declareOnce(", i + 1)) {
    let depth = 0, j = i + "declareOnce".length;
    for (; j < text.length; j++) {
      if (text[j] === "(") depth++;
      else if (text[j] === ")" && --depth === 0) break;
    }
    calls.push([i, j]);
  }
  return [...text.matchAll(/\bnew\s+(?:Counter|Gauge|Histogram|Summary)\s*[<(]/g)]
    .filter((m) => !calls.some(([a, b]) => a < m.index && m.index < b))
    .map((m) => text.slice(0, m.index).split("\n").length);
}

/**
 * Files that construct metrics directly, and why that is not a bypass.
 */
const DIRECT_METRICS: Record<string, string> = {
  "src/metrics/registry.ts": "builds a fresh registry: its metrics are declared once per registry",
  "providers/baremetal/ipam/pool_usage_metrics.ts":
    "replaces its gauges on purpose (removeSingleMetric first): each collects from a new source",
};

/** Every bypass in one file's code (comment lines, as JSDoc examples, are not code). */
function bypassesIn(path: string, source: string): string[] {
  const text = source.replace(/^\s*(?:\*|\/\/).*$/gm, "");
  const found: string[] = [];
  for (const { what, pattern, home } of BYPASSES) {
    if (home.includes(path)) continue;
    for (const m of text.matchAll(pattern)) {
      found.push(`${path}:${text.slice(0, m.index).split("\n").length}: ${what}`);
    }
  }
  if (!(path in DIRECT_METRICS)) {
    for (const line of undeclaredMetrics(text)) {
      found.push(`${path}:${line}: a metric constructed outside declareOnce`);
    }
  }
  return found;
}

Deno.test("src/, providers/ and main.ts use the shared helpers instead of writing them out", async () => {
  const files = [`${ROOT}main.ts`];
  for (const dir of ["src", "providers"]) {
    for await (const file of typescriptFiles(`${ROOT}${dir}`)) files.push(file);
  }
  assert.ok(files.length > 150, `the scan found the source files (${files.length})`);
  const found: string[] = [];
  for (const file of files) {
    found.push(...bypassesIn(file.slice(ROOT.length), await Deno.readTextFile(file)));
  }
  assert.deepEqual(found, [], `bypasses of a shared helper:\n${found.join("\n")}`);
});

Deno.test("the guard's scanner sees each bypass shape and leaves the helpers' own uses alone", () => {
  const text = [
    "const a = (error as Error).message;",
    "const b = e instanceof Error ? e.message : String(e);",
    'const c = registry.getSingleMetric("x") ?? new Gauge({ name: "x" });',
    "const d = x.first < y.first ? -1 : x.first > y.first ? 1 : 0;",
    "const e = r.first <= ip.value && ip.value <= r.last;",
    "const f = ip.value < range.first || ip.value > range.last;",
    'const g = ["ip", "-j", "addr", "show"];',
    'const h = declareOnce(registry, "y", () => new Counter({ name: "y" }));',
    "const i = errorMessage(error);",
    "const j = rangeHolds(range, ip) && compareIps(a, b) === 0;",
    ' * const k = ["ip", "-j", "addr"]; // an example in JSDoc',
    "const l = endpoint.conditions?.ready === false || e.conditions.terminating;",
  ].join("\n");
  assert.deepEqual(bypassesIn("src/x.ts", text).map((f) => f.split(":")[1]), [
    "1",
    "2",
    "3",
    "4",
    "5",
    "6",
    "7",
    "12",
    "12",
    "3",
  ]);
  assert.deepEqual(bypassesIn("src/metrics/registry.ts", text).map((f) => f.split(":")[1]), [
    "1",
    "2",
    "4",
    "5",
    "6",
    "7",
    "12",
    "12",
  ]);
  assert.deepEqual(
    bypassesIn("src/kube/endpoint_nodes.ts", text).filter((f) => /:12:/.test(f)),
    [],
  );
});
