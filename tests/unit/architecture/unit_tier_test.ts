/**
 * The unit tier is self-contained: no test under tests/unit runs BIRD or keepalived (not even
 * their parsers) or makes a network namespace. What needs them lives in tests/integration or
 * tests/e2e and takes them from tests/_support/tools.ts, which fails when one is missing.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { typescriptFiles } from "../../_support/typescript_files.ts";

const UNIT = fileURLToPath(new URL("../", import.meta.url));

/** The shapes of running an external daemon or its parser from a test. */
const EXTERNAL = [
  /\bCommand\(\s*["'`](?:\/usr)?(?:\/s?bin\/)?(?:bird|birdc|keepalived)["'`]/g,
  /["']netns["']\s*,\s*["']add["']/g,
  /_support\/tools\.ts["']/g,
];

/** Where a text runs an external daemon, its parser or a network namespace. */
function externalRuns(text: string): string[] {
  return EXTERNAL.flatMap((pattern) => [...text.matchAll(pattern)].map((m) => m[0]));
}

Deno.test("no unit test runs bird, keepalived or a network namespace", async () => {
  const found: string[] = [];
  let files = 0;
  for await (const file of typescriptFiles(UNIT.replace(/\/$/, ""))) {
    if (file.endsWith("/architecture/unit_tier_test.ts")) continue;
    files++;
    for (const hit of externalRuns(await Deno.readTextFile(file))) {
      found.push(`${file.slice(UNIT.length)}: ${hit}`);
    }
  }
  assert.ok(files > 100, `the scan found the unit tests (${files})`);
  assert.deepEqual(found, [], "move these to tests/integration or tests/e2e");
});

Deno.test("the unit-tier guard sees each shape of running a daemon", () => {
  const text = [
    'new Deno.Command("bird", { args: ["-p", "-c", file] })',
    'new Deno.Command("/usr/sbin/keepalived", { args })',
    'await ip("netns", "add", ns)',
    'import { birdParse } from "../../_support/tools.ts";',
    'const CHECK = ["sh", "-c", "exit 0"]; // a stand-in for `bird -p -c`',
    'new Deno.Command(`${dir}/keepalived`, { args: ["60"] }) // a fake named keepalived',
  ].join("\n");
  assert.equal(externalRuns(text).length, 4);
});
