/**
 * The manual holds together: README.md stays a front door (at most 300 lines, opening with the
 * two commands that work on a fresh machine), and every relative link of README.md and docs/
 * names a file that exists and, for a `#anchor` into a markdown page, a heading that page has.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../../../", import.meta.url);

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to '-'. */
function anchorOf(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}_\- ]/gu, "").replaceAll(" ", "-");
}

/** The anchors of a markdown page's headings (outside code blocks). */
function anchors(markdown: string): Set<string> {
  const found = new Set<string>();
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (/^ *```/.test(line)) fenced = !fenced;
    const heading = !fenced && line.match(/^#{1,6} (.*)$/);
    if (heading) found.add(anchorOf(heading[1]!));
  }
  return found;
}

/** The relative links of a markdown page (outside code blocks), with their line numbers. */
function links(markdown: string): Array<{ line: number; target: string }> {
  const found: Array<{ line: number; target: string }> = [];
  let fenced = false;
  for (const [i, line] of markdown.split("\n").entries()) {
    if (/^ *```/.test(line)) fenced = !fenced;
    if (fenced) continue;
    for (const match of line.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = match[1]!;
      if (!/^[a-z]+:/.test(target)) found.push({ line: i + 1, target });
    }
  }
  return found;
}

async function pages(): Promise<string[]> {
  const list = ["README.md"];
  for await (const entry of Deno.readDir(new URL("docs/", ROOT))) {
    if (entry.name.endsWith(".md")) list.push(`docs/${entry.name}`);
  }
  return list.sort();
}

Deno.test("README.md is a front door: at most 300 lines, the two commands first", async () => {
  const readme = await Deno.readTextFile(new URL("README.md", ROOT));
  const lines = readme.trimEnd().split("\n");
  assert.ok(lines.length <= 300, `README.md has ${lines.length} lines`);
  const opening = lines.slice(0, 6).join("\n");
  assert.match(opening, /^deno task demo\b/m);
  assert.match(opening, /^deno task test\b/m);
  const tasks = JSON.parse(await Deno.readTextFile(new URL("deno.json", ROOT))).tasks;
  assert.ok(tasks.demo && tasks.test, "deno.json has the demo and test tasks");
  for (
    const rule of [
      "A pool's VIPs live on the hosts it names",
      "its machine's name",
      "same inventory",
    ]
  ) {
    assert.ok(readme.includes(rule), `README.md states the rule "${rule}"`);
  }
});

Deno.test("every relative link of README.md and docs/ resolves, anchors included", async () => {
  const broken: string[] = [];
  for (const page of await pages()) {
    const text = await Deno.readTextFile(new URL(page, ROOT));
    const dir = new URL(page.includes("/") ? page.slice(0, page.lastIndexOf("/") + 1) : "", ROOT);
    for (const { line, target } of links(text)) {
      const [path, anchor] = target.split("#") as [string, string | undefined];
      const file = path === "" ? new URL(page, ROOT) : new URL(path, dir);
      let body: string | undefined;
      try {
        const info = await Deno.stat(file);
        body = info.isFile && file.pathname.endsWith(".md")
          ? await Deno.readTextFile(file)
          : undefined;
      } catch {
        broken.push(`${page}:${line}: ${target}: no such file`);
        continue;
      }
      if (anchor !== undefined && body !== undefined && !anchors(body).has(anchor)) {
        broken.push(`${page}:${line}: ${target}: no such heading`);
      }
    }
  }
  assert.deepEqual(broken, []);
});

Deno.test("the link check finds a broken link (it can fail)", () => {
  assert.deepEqual(links("see [x](docs/nope.md#a) and [y](https://example.com)"), [
    { line: 1, target: "docs/nope.md#a" },
  ]);
  assert.ok(anchors("# Install and upgrade\n## From the package\n").has("from-the-package"));
  assert.ok(!anchors("```\n# not a heading\n```\n").has("not-a-heading"));
});
