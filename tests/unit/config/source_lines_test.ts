import assert from "node:assert/strict";
import { formatPath, indexLines, locateLine } from "../../../src/config/source_lines.ts";

const TEXT = `# comment [not a table]
[cluster]
name = "x" # trailing

[[pools]]
name = "a"

[[pools]]
name = "b"
addresses = [
  "10.0.0.0/24", # first
  # a comment between elements
  "10.0.1.0/24",
]
reserved = ["10.0.0.1", "10.0.0.2"]

[pools.extra]
note = """
a multi-line
string with "quotes" and [brackets]
"""

[[machines]]
name = "m0"
"quoted key" = 'literal \\ string'
labels = { "example.com/a" = "1", b = { c = [1,
  2] } }
taints.'example.com/b' = "2"

[[machines]]
name = "m1"

[[machines.disks]]
size = 1

[[machines.disks]]
size = 2
`;

Deno.test("locateLine() finds table headers, keys and counted arrays of tables", () => {
  const index = indexLines(TEXT);
  assert.equal(locateLine(index, ["cluster"]), 2);
  assert.equal(locateLine(index, ["cluster", "name"]), 3);
  assert.equal(locateLine(index, ["pools", 0]), 5);
  assert.equal(locateLine(index, ["pools", 1, "name"]), 9);
  assert.equal(locateLine(index, ["machines", 1, "name"]), 31);
  assert.equal(locateLine(index, ["machines", 1, "disks", 1, "size"]), 37);
});

Deno.test("locateLine() finds each element of a multi-line array", () => {
  assert.equal(locateLine(TEXT, ["pools", 1, "addresses", 0]), 11);
  assert.equal(locateLine(TEXT, ["pools", 1, "addresses", 1]), 13);
  assert.equal(locateLine(TEXT, ["pools", 1, "reserved", 1]), 15);
});

Deno.test("locateLine() follows multi-line strings, quoted keys and inline tables", () => {
  const index = indexLines(TEXT);
  assert.equal(locateLine(index, ["pools", 1, "extra", "note"]), 18);
  assert.equal(locateLine(index, ["machines", 0, "name"]), 24);
  assert.equal(locateLine(index, ["machines", 0, "quoted key"]), 25);
  assert.equal(locateLine(index, ["machines", 0, "labels", "example.com/a"]), 26);
  assert.equal(locateLine(index, ["machines", 0, "labels", "b", "c", 1]), 27);
  assert.equal(locateLine(index, ["machines", 0, "taints", "example.com/b"]), 28);
});

Deno.test("locateLine() falls back to the nearest written ancestor", () => {
  assert.equal(locateLine(TEXT, ["pools", 0, "addresses"]), 5);
  assert.equal(locateLine(TEXT, ["server", "listen"]), undefined);
});

Deno.test("indexLines() never throws on text that is not TOML (it only locates in valid files)", () => {
  assert.equal(indexLines('a = 1\nb = "unterminated\nc = 3\n').size, 0);
});

Deno.test("indexLines() is linear on a table header of 50k dotted keys", () => {
  const keys = Array.from({ length: 50_000 }, (_, i) => `k${i}`);
  const index = indexLines(`[${keys.join(".")}]\nx = 1\n`);
  assert.equal(locateLine(index, [...keys, "x"]), 2);
  assert.equal(locateLine(index, ["k0"]), 1);
});

Deno.test("formatPath() quotes keys that are not bare", () => {
  assert.equal(formatPath(["machines", 3, "internal_ips", 0]), "machines[3].internal_ips[0]");
  assert.equal(formatPath(["machines", 0, "labels", "a.b/c"]), 'machines[0].labels["a.b/c"]');
  assert.equal(formatPath([]), "");
});
