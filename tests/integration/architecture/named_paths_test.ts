/**
 * Every file a comment names exists, so a reader who follows one arrives somewhere. The comments
 * of every TypeScript file in the repository are read (strings and code are not), and so is the
 * whole text of ARCHITECTURE.md, which is a map and nothing else. A name counts as a file path
 * when it holds a `/` or ends in `.ts` or `.md` (`state.yaml` in a usage line is an example, not a
 * reference); absolute paths and URLs are the host's and the web's, not the repository's.
 *
 * A path is found when it names a tracked file relative to the commenting file's folder, from the
 * repository root, or as the tail of one (`keepalived/model.ts` inside providers/baremetal). A
 * path that leaves the repository (a document kept beside it) is refused: a clone holds only this
 * repository, so the reference could not be followed there.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

/** The repository's files, as git tracks them plus those not yet committed. */
function repositoryFiles(): string[] {
  const out = new Deno.Command("git", {
    args: ["ls-files", "--cached", "--others", "--exclude-standard"],
    cwd: ROOT,
    stdout: "piped",
  }).outputSync();
  assert.ok(out.success, "git ls-files failed");
  return new TextDecoder().decode(out.stdout).split("\n").filter((f) => f !== "")
    .filter((f) => {
      try {
        return Deno.statSync(`${ROOT}${f}`).isFile;
      } catch {
        return false; // deleted in the work tree
      }
    });
}

/**
 * The comments of a TypeScript text: `// …` and `/* … *\/`, skipping string and template
 * literals (a string may hold `/*` or a path that is data, not a reference).
 */
export function commentsOf(text: string): string[] {
  const comments: string[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!, next = text[i + 1];
    if (c === "/" && next === "/") {
      const end = text.indexOf("\n", i);
      comments.push(text.slice(i, end < 0 ? text.length : end));
      i = end < 0 ? text.length : end;
    } else if (c === "/" && next === "*") {
      const end = text.indexOf("*/", i + 2);
      comments.push(text.slice(i, end < 0 ? text.length : end + 2));
      i = end < 0 ? text.length : end + 2;
    } else if (c === '"' || c === "'" || c === "`") {
      // to the closing quote (a quote or backtick string ends at a line end at the latest)
      let j = i + 1;
      while (j < text.length && text[j] !== c && (c === "`" || text[j] !== "\n")) {
        j += text[j] === "\\" ? 2 : 1;
      }
      i = j + 1;
    } else i++;
  }
  return comments;
}

const PATH =
  /(?<![\w./@:-])((?:\.\.?\/)*(?:[\w.-]+\/)*[\w-][\w.-]*\.(?:ts|md|toml|json|yaml|yml|sh|py|conf|service|txt))(?![\w/-])/g;

/** The file paths a text names (see the module comment for what counts). */
export function namedPaths(text: string): string[] {
  return [...text.matchAll(PATH)].map((m) => m[1]!).filter((p) => /\/|\.(ts|md)$/.test(p));
}

/**
 * Why a named path leads nowhere, or undefined when it names a file.
 * @param from the naming file, relative to the root
 * @param path the path as written
 * @param files every file of the repository
 */
export function missing(
  from: string,
  path: string,
  files: ReadonlySet<string>,
): string | undefined {
  const resolve = (base: string[]) => {
    const parts = [...base];
    for (const part of path.split("/")) {
      if (part === "..") {
        if (parts.length === 0) return undefined; // leaves the repository
        parts.pop();
      } else if (part !== ".") parts.push(part);
    }
    return parts.join("/");
  };
  const fromFolder = resolve(from.split("/").slice(0, -1));
  if (fromFolder === undefined) return "leaves the repository: name a file in it, or drop it";
  if (files.has(fromFolder) || files.has(resolve([]) ?? "")) return undefined;
  if (!path.startsWith(".")) {
    for (const file of files) if (file.endsWith(`/${path}`)) return undefined;
  }
  return "no such file";
}

Deno.test("every file a comment (or ARCHITECTURE.md) names exists", () => {
  const all = repositoryFiles();
  const files = new Set(all);
  const sources = all.filter((f) => f.endsWith(".ts"));
  assert.ok(sources.length > 300, `read the TypeScript files (${sources.length})`);
  const stale: string[] = [];
  let named = 0;
  for (const file of [...sources, "ARCHITECTURE.md"]) {
    const text = Deno.readTextFileSync(`${ROOT}${file}`);
    const parts = file.endsWith(".md") ? [text] : commentsOf(text);
    for (const path of parts.flatMap(namedPaths)) {
      named++;
      const why = missing(file, path, files);
      if (why) stale.push(`${file}: ${path}: ${why}`);
    }
  }
  assert.ok(named > 200, `found the named paths (${named})`);
  assert.deepEqual(stale, [], `comments naming files that do not exist:\n${stale.join("\n")}`);
});

Deno.test("the scanner reads comments, not strings, and resolves the three ways", () => {
  const text = [
    "// see src/kube/ports.ts and keepalived/model.ts",
    'const example = "/* not a comment: gone/file.ts */";',
    "/**",
    " * DESIGN.md and ../../../outside.md, `state.yaml` and /etc/keelson/keelson.toml",
    " */",
    "const url = 'https://example.com/x/y.md'; // https://example.com/a/b.md",
  ].join("\n");
  const found = commentsOf(text).flatMap(namedPaths);
  assert.deepEqual(found, [
    "src/kube/ports.ts",
    "keepalived/model.ts",
    "DESIGN.md",
    "../../../outside.md",
  ]);
  const files = new Set(["src/kube/ports.ts", "providers/baremetal/keepalived/model.ts"]);
  const from = "providers/baremetal/host_side.ts";
  assert.deepEqual(found.map((p) => missing(from, p, files)), [
    undefined,
    undefined,
    "no such file",
    "leaves the repository: name a file in it, or drop it",
  ]);
  assert.equal(missing(from, "./keepalived/model.ts", files), undefined);
  assert.equal(missing(from, "../../src/kube/ports.ts", files), undefined);
});
