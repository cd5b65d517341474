/**
 * The one walk over source files the guard tests share: every `.ts` file below a folder.
 *
 * @module
 */

/**
 * Every `.ts` file below `dir`, depth first, as `dir/…` paths.
 * @param dir the folder, as the caller wants the paths to start (no trailing slash)
 * @param root prepended to `dir` to read it (e.g. the repository root, for repository-relative
 *   paths); "" when `dir` can be read as it is
 * @example
 * for await (const path of typescriptFiles("src", ROOT)) // "src/cli/run.ts", …
 */
export async function* typescriptFiles(dir: string, root = ""): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(`${root}${dir}`)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) yield* typescriptFiles(path, root);
    else if (entry.isFile && entry.name.endsWith(".ts")) yield path;
  }
}

/**
 * The code of every `.ts` file below `dir`, its comments stripped (so a guard judges code, not
 * what a comment says of it), keyed by `dir/…` path.
 * @param dir the folder, relative to `root`
 * @param root the repository root (with its trailing slash)
 */
export async function codeOfFiles(dir: string, root: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for await (const path of typescriptFiles(dir, root)) {
    const text = await Deno.readTextFile(`${root}${path}`);
    files.set(path, text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, ""));
  }
  return files;
}

/**
 * The paths, sorted, of the files whose code matches `pattern`.
 * @param files code by path (`codeOfFiles`)
 * @param pattern what to look for
 */
export function filesMatching(files: ReadonlyMap<string, string>, pattern: RegExp): string[] {
  return [...files].filter(([, text]) => pattern.test(text)).map(([path]) => path).sort();
}
