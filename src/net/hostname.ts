/**
 * This machine's host name, read in one place: the default `--host` (its short form) and the
 * leader-election identity (upstream's `os.Hostname()`); Events name `--host` as their source.
 *
 * @module
 */

/**
 * The host name as the OS reports it.
 * @param form `full` (as reported) or `short` (up to the first dot) @default "full"
 * @returns the name, or undefined when it cannot be read (e.g. no `--allow-sys=hostname`)
 */
export function hostname(form: "full" | "short" = "full"): string | undefined {
  let name: string;
  try {
    name = Deno.hostname();
  } catch {
    return undefined;
  }
  return form === "short" ? name.split(".")[0] : name;
}
