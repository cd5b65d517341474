/**
 * What the compiled binary may write: the `--allow-write` list scripts/compile.sh bakes into it
 * from scripts/compile_permissions.txt (a unit test keeps the two equal). Deno refuses any other
 * write or unix-socket connect at run time (`NotCapable`), so an inventory that points a path
 * Keelson writes elsewhere is refused by `check`, at start and at a reload, naming the key,
 * instead of failing on the host later.
 *
 * @module
 */
import { dirname, resolve } from "node:path";
import type { RawIssue } from "./_schema_issues.ts";
import type { Config } from "./types.ts";
import { daemonsDir } from "./daemon_dir.ts";

/**
 * The directories the compiled binary may write into (and below): keepalived's include
 * directory and BIRD's file (the root step, `keelson apply-host-config`, installs there), the
 * track files and staging directory (the agent), root's directory beside them holding
 * keepalived's notify FIFO and the root step's read-only BIRD socket (`daemon_dir.ts`: the agent
 * opens the FIFO read-write and connects to the socket, the root step serves it), and BIRD's
 * control socket (the root step).
 */
export const BAKED_WRITE_DIRS: readonly string[] = [
  "/etc/keepalived/conf.d",
  "/run/keelson",
  "/run/keelson-daemons",
  "/etc/keelson/bird",
  "/run/bird",
];

/**
 * Whether the binary may write `path` (the directory itself or anything below it).
 * @param path an absolute or relative path (relative: to the working directory, as Deno reads it)
 * @param dirs the allowed directories. @default BAKED_WRITE_DIRS
 * @returns true when the path is at or under one of them
 */
export function mayWrite(path: string, dirs: readonly string[] = BAKED_WRITE_DIRS): boolean {
  const absolute = resolve(path);
  return dirs.some((dir) => absolute === dir || absolute.startsWith(`${dir}/`));
}

/**
 * One issue per path the configuration makes Keelson write (or connect to) that the binary may
 * not: `[keepalived] config_file` (a temp file is written next to it), `track_file_dir` and the
 * daemon directory beside it (`daemon_dir.ts`), and `[bgp] config_file` and `socket`. Sections Keelson does not run (`[keepalived] enabled =
 * false`, no `[bgp]`) are not checked.
 * @param config a validated configuration
 * @returns the issues, at the offending keys
 */
export function writePathIssues(config: Config): RawIssue[] {
  const issues: RawIssue[] = [];
  const check = (path: string, key: string[], what: "file" | "dir") => {
    // a file is written as a temp file in its directory, then renamed
    if (mayWrite(what === "file" ? dirname(resolve(path)) : path)) return;
    issues.push({ path: key, message: outsideMessage(path) });
  };
  const ka = config.keepalived;
  if (ka.enabled) check(ka.config_file, ["keepalived", "config_file"], "file");
  if (ka.enabled || config.bgp) {
    check(ka.track_file_dir, ["keepalived", "track_file_dir"], "dir");
    // the notify FIFO and the read-only BIRD socket: `<track_file_dir>-daemons`
    const daemons = daemonsDir(ka.track_file_dir);
    if (mayWrite(ka.track_file_dir) && !mayWrite(daemons)) {
      issues.push({
        path: ["keepalived", "track_file_dir"],
        message: `${outsideMessage(daemons)} (the directory beside track_file_dir that holds ` +
          "keepalived's notify FIFO and the read-only BIRD socket)",
      });
    }
  }
  if (config.bgp) {
    check(config.bgp.config_file, ["bgp", "config_file"], "file");
    check(config.bgp.socket, ["bgp", "socket"], "file");
  }
  return issues;
}

/**
 * The sentence `check` gives for a path outside the baked write set.
 * @param path the path as the inventory wrote it
 * @returns the message
 */
export function outsideMessage(path: string): string {
  return `${JSON.stringify(path)} is outside the directories the keelson binary may write: ` +
    `only under ${BAKED_WRITE_DIRS.join(", ")} (its permissions are fixed when it is built, ` +
    `scripts/compile_permissions.txt); use a path under one of them (docs/security.md "Permissions")`;
}
