/**
 * Comments name what exists: a function named in backquotes in a comment of main.ts, src/ or
 * providers/ is one the code defines or uses (or a name of another project, listed below with its
 * owner), and a section sign cites a standard (`RFC 5798 §5.2.3`), never a section of a document
 * that does not ship with the code. A renamed or removed function otherwise lives on in the
 * comments that explained it.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { typescriptFiles } from "../../_support/typescript_files.ts";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

/** Names of other projects that comments quote, and whose they are. */
const OUTSIDE_NAMES: Readonly<Record<string, string>> = {
  syncNode: "upstream's cloud-node controller",
  nodeSyncLoop: "upstream's service controller",
  needsUpdate: "upstream's service controller (and ours)",
  shouldSyncUpdatedNode: "upstream's service controller",
  eventLoopLag: "prom-client",
  monitorEventLoopDelay: "node:perf_hooks",
  isReadable: "node:stream",
  retryPeriod: "client-go's leader election",
  renewDeadline: "client-go's leader election",
  localeCompare: "JavaScript's String.prototype",
  eventTime: "events.k8s.io Event",
  gcTerminating: "kube-controller-manager's pod garbage collector",
  gcCheckPeriod: "kube-controller-manager's pod garbage collector",
};

/** A backquoted lowerCamelCase name, optionally called: `nextNodeSet` or `nextNodeSet()`. */
const QUOTED_FUNCTION_REGEXP = /`([a-z][a-z0-9]*[A-Z][A-Za-z0-9]*)(?:\(\))?`/g;
/** A section sign not preceded by an RFC number. */
const UNSHIPPED_SECTION_REGEXP = /(?<!RFC \d{3,5} )§\s*\d/g;

/** A file's comments and its code without them. */
export function splitComments(text: string): { comments: string; code: string } {
  const comments: string[] = [];
  const code = text.replace(/\/\*[\s\S]*?\*\/|(?<![:"'`\w])\/\/.*$/gm, (comment) => {
    comments.push(comment);
    return "";
  });
  return { comments: comments.join("\n"), code };
}

/**
 * The stale names and unshipped section references of a set of files.
 * @param files path → text
 * @returns one line per finding, `path: what`
 */
export function staleCommentNames(files: ReadonlyMap<string, string>): string[] {
  const identifiers = new Set<string>(Object.keys(OUTSIDE_NAMES));
  const split = new Map([...files].map(([path, text]) => [path, splitComments(text)]));
  for (const { code } of split.values()) {
    for (const m of code.matchAll(/[A-Za-z_$][\w$]*/g)) identifiers.add(m[0]);
  }
  const findings: string[] = [];
  for (const [path, { comments }] of split) {
    for (const m of comments.matchAll(QUOTED_FUNCTION_REGEXP)) {
      if (!identifiers.has(m[1]!)) findings.push(`${path}: \`${m[1]}\` is defined nowhere`);
    }
    for (const m of comments.matchAll(UNSHIPPED_SECTION_REGEXP)) {
      findings.push(`${path}: "${m[0]}" cites a section of no shipped document`);
    }
  }
  return findings;
}

Deno.test("staleCommentNames() finds a removed function and a section of an unshipped document", () => {
  const files = new Map([
    ["a.ts", "/** Like `nextNodeSet`, see `keep()` (upstream §3.8). */\nexport function keep() {}"],
    ["b.ts", "// RFC 5798 §5.2.3 allows it; `syncNode` is upstream's\nconst url = 'http://x';"],
  ]);
  assert.deepEqual(staleCommentNames(files), [
    "a.ts: `nextNodeSet` is defined nowhere",
    'a.ts: "§3" cites a section of no shipped document',
  ]);
});

Deno.test("comments in main.ts, src/ and providers/ name functions that exist and cite no unshipped section", async () => {
  const files = new Map<string, string>();
  files.set("main.ts", await Deno.readTextFile(`${ROOT}main.ts`));
  for (const dir of ["src", "providers"]) {
    for await (const path of typescriptFiles(dir, ROOT)) {
      files.set(path, await Deno.readTextFile(`${ROOT}${path}`));
    }
  }
  assert.ok(files.size > 100, `read ${files.size} files; the walk found too few`);
  const findings = staleCommentNames(files);
  assert.deepEqual(findings, [], `comments naming what does not exist:\n${findings.join("\n")}`);
});
