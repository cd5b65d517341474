/**
 * The flags of the commands that read an inventory and a saved cluster state (`plan`, `render`,
 * `render bird`), spelled once so they keep the same names and short forms.
 *
 * @module
 */

/** `-c/--config FILE`, `-s/--state SNAPSHOT` and `-h/--help`, as a parseArgs option table. */
export const INPUT_FLAGS = {
  config: { type: "string", short: "c" },
  state: { type: "string", short: "s" },
  help: { type: "boolean", short: "h" },
} as const;
